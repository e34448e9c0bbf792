"""The base image: Debian bookworm (minbase) with Python 3, built locally.

No image registry is reachable on air-gapped machines, so ``gem-eval sandbox
build-base`` makes the base image from Debian's packages: ``debootstrap --variant=minbase``
into a directory, a user ``agent`` (uid 1000) and ``/workspace`` owned by it, then
``docker import``. The result is saved to the cache (``docker save``, see
:func:`base_entry`) so the next build on a machine with a cold Docker (a CI runner) is a
``docker load`` of a few seconds instead of a debootstrap of a minute or more.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from gem_eval.bundled import in_bytecode_cache
from gem_eval.cache import CacheEntry, cache_dir, file_lock
from gem_eval.errors import SandboxUnavailableError, UserError
from gem_eval.sandbox import docker_client

BASE_IMAGE = "gem-eval/base:bookworm"
PACKAGES = ("python3", "procps")
SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
_RECIPE = f"{SUITE} minbase {' '.join(PACKAGES)} user=agent:1000 workdir=/workspace v2"
RECIPE_HASH = hashlib.sha256(_RECIPE.encode()).hexdigest()[:12]
RECIPE_LABEL = "gem-eval.recipe"


def apt_mirror() -> str:
    """The Debian mirror this machine's apt uses (the one its network reaches)."""
    sources = Path("/etc/apt/sources.list.d")
    files = sorted(sources.glob("*.sources")) + sorted(sources.glob("*.list"))
    files.append(Path("/etc/apt/sources.list"))
    for path in files:
        try:
            text = path.read_text()
        except OSError:
            continue
        for match in re.finditer(r"(?:URIs:\s*|deb\s+)(\S+/debian)/?\s", text):
            return match.group(1)
    return DEFAULT_MIRROR


def image_recipe(tag: str) -> str | None:
    """The recipe label of a local image, ``""`` for an image without one, ``None`` when
    there is no such image."""
    from docker import errors

    try:
        image = docker_client.client().images.get(tag)
    except errors.ImageNotFound:
        return None
    return str(image.labels.get(RECIPE_LABEL, ""))


def base_entry() -> CacheEntry:
    """The saved base image, ``images/base-<recipe>.tar`` in the cache (``docker save``)."""
    return CacheEntry(cache_dir("images") / f"base-{RECIPE_HASH}.tar", check=whole_tarball)


def whole_tarball(path: Path) -> bool:
    """Whether ``path`` is a whole ``docker save`` archive: every member readable, a
    ``manifest.json`` among them, and the archive's closing zero blocks at its end (a
    layer is itself a tar ending in zeros, so a cut after a member needs the other two)."""
    size = path.stat().st_size
    if size < 1024 or size % 512:
        return False
    with path.open("rb") as f:
        f.seek(size - 1024)
        if f.read() != bytes(1024):
            return False
    try:
        with tarfile.open(path) as tar:
            return "manifest.json" in tar.getnames()
    except (tarfile.TarError, OSError):
        return False


def ensure_base(
    tag: str = BASE_IMAGE,
    *,
    mirror: str | None = None,
    force: bool = False,
    log: Callable[[str], None] = lambda _: None,
) -> str:
    """Make sure the base image exists, building it if needed; how it was obtained
    (``"present"``, ``"loaded"`` from the cache, or ``"built"``).

    Processes that ask at once take turns (the cache entry's lock): one builds, the
    next finds the image present."""
    if not force and image_recipe(tag) == RECIPE_HASH:
        return "present"
    entry = base_entry()
    with entry.lock():
        if not force and image_recipe(tag) == RECIPE_HASH:
            return "present"
        docker = docker_client.client()
        if not force and entry.ready():
            log(f"loading {entry.path}")
            with entry.path.open("rb") as f:
                (image,) = docker.images.load(f)
            image.tag(tag)
            return "loaded"
        _build(tag, mirror or apt_mirror(), log)
        log(f"saving {entry.path}")

        def save(tarball: Path) -> None:
            with tarball.open("wb") as f:
                for chunk in docker.images.get(tag).save(named=True):
                    f.write(chunk)

        entry.publish(save)
    return "built"


def _build(tag: str, mirror: str, log: Callable[[str], None]) -> None:
    if shutil.which("debootstrap") is None:
        raise SandboxUnavailableError(
            "building the base image needs debootstrap: apt-get install debootstrap"
        )
    if os.geteuid() != 0:
        raise UserError("building the base image needs root (debootstrap and chroot)")
    with tempfile.TemporaryDirectory(prefix="gem-eval-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        log(f"debootstrap {SUITE} from {mirror} (about a minute)")
        include = ",".join(PACKAGES)
        _run(["debootstrap", "--variant=minbase", f"--include={include}", SUITE, rootfs, mirror])
        log("adding user agent and /workspace")
        _run(["chroot", rootfs, "useradd", "-m", "-u", "1000", "-s", "/bin/bash", "agent"])
        (rootfs / "workspace").mkdir()
        os.chown(rootfs / "workspace", 1000, 1000)
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for path in (rootfs / junk).glob("*"):
                if path.is_file():
                    path.unlink()
        tarball = Path(tmp) / "rootfs.tar"
        log("docker import")
        _run(["tar", "-C", rootfs, "-cf", tarball, "."])
        repository, _, version = tag.partition(":")
        docker_client.client().api.import_image_from_file(
            str(tarball),
            repository=repository,
            tag=version or "latest",
            changes=[
                'CMD ["/bin/bash"]',
                "WORKDIR /workspace",
                "ENV LANG=C.UTF-8",
                f"LABEL {RECIPE_LABEL}={RECIPE_HASH} gem-eval.prepared=agent:/workspace",
            ],
        )


def _run(argv: list[str | Path]) -> None:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise SandboxUnavailableError(f"{argv[0]} failed: {' / '.join(tail)}")


BUILT_REPOSITORY = "gem-eval/task"
"""Every task and service image gem-eval builds is ``gem-eval/task:<context hash>``."""


def context_hash(context: Path, dockerfile_text: str) -> str:
    """A hash of a build context's files (names, modes, bytes) and the Dockerfile used:
    the files :func:`context_files` sends, so a file ``.dockerignore`` leaves out
    changes nothing."""
    digest = hashlib.sha256(dockerfile_text.encode() + b"\0")
    for path in context_files(context):
        if not path.is_file():
            continue
        digest.update(str(path.relative_to(context)).encode() + b"\0")
        digest.update(oct(path.stat().st_mode & 0o777).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def context_files(context: Path) -> list[Path]:
    """The files and directories of ``context`` a build sends, sorted: all but what its
    ``.dockerignore`` excludes (see :mod:`gem_eval.sandbox.dockerignore`) and bytecode
    caches (pip compiles the bundled tasks of an installed wheel: no content).

    Raises:
        UserError: The ``.dockerignore`` has a line Docker refuses.
    """
    from gem_eval.sandbox.dockerignore import FILENAME, context_entries

    try:
        return context_entries(context, lambda relative: not in_bytecode_cache(relative))
    except ValueError as exc:
        raise UserError(f"{context / FILENAME}: {exc}") from None


def build_image(
    context: Path,
    dockerfile: str = "Dockerfile",
    image_map: dict[str, str] | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> str:
    """Build a task's image from its Dockerfile (legacy builder), cached by content: an
    unchanged context and Dockerfile are not rebuilt. ``image_map`` substitutes ``FROM``
    images (see :mod:`gem_eval.sandbox.image_map`); every base image must be local, as
    no registry is used. Concurrent builds of one image wait for each other.
    Returns the image tag."""
    from gem_eval.sandbox.image_map import base_images, rewrite_dockerfile

    path = context / dockerfile
    if not path.is_file():
        raise UserError(f"{path}: no such Dockerfile")
    text = rewrite_dockerfile(path.read_text(), image_map or {})
    tag = f"{BUILT_REPOSITORY}:{context_hash(context, text)}"
    # One build per tag across threads and processes: the next caller finds it built.
    with file_lock(cache_dir("images") / "locks" / f"{tag.replace('/', '_')}.lock"):
        if image_recipe(tag) is not None:
            return tag
        for base in base_images(text):
            if image_recipe(base) is None:
                raise SandboxUnavailableError(
                    f"{path}: base image {base!r} is not on this machine (no registry is "
                    f"used): map it to a local one, e.g. --image-map '{base}={BASE_IMAGE}'"
                )
        log(f"building {tag} from {path}")
        _docker_build(context, dockerfile, text, tag, path)
    return tag


def _docker_build(context: Path, dockerfile: str, text: str, tag: str, shown: Path) -> None:
    """``docker build`` of ``context`` with ``text`` as its Dockerfile."""
    from docker import errors

    archive = _context_tar(context, dockerfile, text)
    try:
        docker_client.client().images.build(
            fileobj=archive,
            custom_context=True,
            dockerfile=dockerfile,
            tag=tag,
            rm=True,
            forcerm=True,
        )
    except errors.BuildError as exc:
        chunks = [str(c.get("stream", c.get("error", ""))) for c in exc.build_log]
        lines = [line.strip() for chunk in chunks for line in chunk.splitlines() if line.strip()]
        tail = " / ".join(lines[-5:])[-400:]  # the failing step and its last words
        raise SandboxUnavailableError(f"building {tag} from {shown} failed: {tail}") from None
    except errors.APIError as exc:
        raise docker_client.translate(exc, f"building {shown}") from None


def _context_tar(context: Path, dockerfile: str, text: str) -> io.BytesIO:
    """The build context as a tar, with the (rewritten) Dockerfile in place."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in context_files(context):
            name = str(path.relative_to(context))
            if name != dockerfile:
                tar.add(path, arcname=name, recursive=False)
        data = text.encode()
        info = tarfile.TarInfo(dockerfile)
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer
