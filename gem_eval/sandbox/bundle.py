"""A directory of files built once in an image and copied into containers as a tar: how
gem-eval brings tools a task image lacks (its tmux, asciinema for Terminus-2).

The image is built from a Dockerfile over the local base image (cached by content, as
every built image is: :func:`~gem_eval.sandbox.images.build_image`), the directory read
out of it once, and re-rooted at the path it will have in a container, owned by root,
executable bits kept and nothing writable but by root.
"""

from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path


def directory_bundle(dockerfile: str, inside: str, target: str) -> bytes:
    """The directory ``inside`` of an image built from ``dockerfile``, as a tar that
    unpacks at ``/`` into ``target``. Blocking (builds on first use).

    Args:
        dockerfile: The Dockerfile's text (``FROM`` the local base image).
        inside: The directory to take, as the Dockerfile made it (``/gem-eval-tmux``).
        target: Where it goes in a container (``/.gem-eval-tmux``).
    """
    from gem_eval.sandbox import docker_client
    from gem_eval.sandbox.images import build_image, ensure_base

    ensure_base()
    with tempfile.TemporaryDirectory(prefix="gem-eval-bundle-") as tmp:
        (Path(tmp) / "Dockerfile").write_text(dockerfile)
        image = build_image(Path(tmp))
    container = docker_client.client().containers.create(image, command=["true"])
    try:
        stream, _ = container.get_archive(inside)
        source = io.BytesIO(b"".join(stream))
    finally:
        container.remove(force=True)
    out = io.BytesIO()
    old_prefix, new_prefix = inside.lstrip("/"), target.lstrip("/")
    with tarfile.open(fileobj=source) as old, tarfile.open(fileobj=out, mode="w") as new:
        for member in old.getmembers():
            content = old.extractfile(member) if member.isfile() else None
            member.name = new_prefix + member.name.removeprefix(old_prefix)
            member.uid = member.gid = 0
            member.uname = member.gname = "root"
            member.mode = 0o755 if member.isdir() or member.mode & 0o111 else 0o644
            new.addfile(member, content)
    return out.getvalue()
