"""Sandboxes from a task's ``sandbox:`` settings, and the check that they can be made."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from gem_eval.errors import SandboxUnavailableError, UserError
from gem_eval.records import SandboxSpec
from gem_eval.sandbox.base import Sandbox
from gem_eval.sandbox.policy import memory_bytes


def make_sandbox(spec: SandboxSpec, run_id: str | None = None) -> Sandbox:
    """An unstarted sandbox as ``spec`` describes (``type: none`` is not a sandbox)."""
    if spec.type == "docker":
        from gem_eval.sandbox.agent_files import agent_mounts
        from gem_eval.sandbox.docker import DockerSandbox
        from gem_eval.sandbox.images import BASE_IMAGE

        return DockerSandbox(
            spec.image or BASE_IMAGE,
            user=spec.user,
            workdir=spec.workdir,
            network=spec.network,
            memory=spec.memory,
            cpus=spec.cpus,
            pids=spec.pids,
            run_id=run_id,
            output_limit=spec.output_limit,
            env=spec.env,
            sidecars=spec.sidecars,
            hostname=spec.hostname,
            depends_on=spec.depends_on,
            reach_endpoint=spec.agent_program,
            mounts=agent_mounts() if spec.agent_program else None,
        )
    if spec.type == "local":
        from gem_eval.sandbox.local import LocalSandbox

        return LocalSandbox(
            unsafe=spec.unsafe,
            memory_mb=memory_bytes(spec.memory) // 2**20,
            workdir=spec.workdir,
            output_limit=spec.output_limit,
        )
    raise ValueError(f"sandbox type {spec.type!r} makes no sandbox")


def needs_resolving(spec: SandboxSpec) -> bool:
    """Whether :func:`resolve_image` has anything to do for ``spec``."""
    builds = spec.build is not None or any(s.build is not None for s in spec.sidecars)
    return spec.type == "docker" and (builds or bool(spec.image_map))


def resolve_image(spec: SandboxSpec, log: Callable[[str], None] = lambda _: None) -> SandboxSpec:
    """``spec`` with ``build`` done (the image built, or found cached, and named) and
    ``image_map`` applied to a prebuilt ``image``; so too each sidecar's.

    An image-map target that is a build directory is built only when the image needs it
    (a ``FROM`` of the Dockerfile, or the prebuilt image, maps to it); ``log`` hears of
    each image actually built.
    """
    if not needs_resolving(spec):
        return spec
    sidecars = [
        s.model_copy(
            update={"image": _image(s.image, s.build, s.dockerfile, spec, log), "build": None}
        )
        for s in spec.sidecars
    ]
    image = _image(spec.image, spec.build, spec.dockerfile, spec, log)
    return spec.model_copy(update={"image": image, "build": None, "sidecars": sidecars})


def _image(
    image: str | None,
    build: str | None,
    dockerfile_name: str,
    spec: SandboxSpec,
    log: Callable[[str], None],
) -> str | None:
    """The image of one container of ``spec``: ``image`` mapped, or ``build`` built."""
    from gem_eval.sandbox.image_map import base_images, matching_key
    from gem_eval.sandbox.images import build_image

    if build is None:
        key = None if image is None else matching_key(image, spec.image_map)
        return image if key is None else _built_or_named(spec.image_map[key], log)
    context = Path(build)
    dockerfile = context / dockerfile_name
    try:
        found = dockerfile.is_file()
    except OSError as exc:  # a name the system refuses (too long)
        raise UserError(f"{dockerfile}: {exc.strerror}") from None
    if not found:
        raise UserError(f"{dockerfile}: no such Dockerfile")
    needed = {matching_key(base, spec.image_map) for base in base_images(dockerfile.read_text())}
    image_map = {
        key: _built_or_named(target, log) if key in needed else target
        for key, target in spec.image_map.items()
    }
    return build_image(context, dockerfile_name, image_map, log=log)


def _built_or_named(target: str, log: Callable[[str], None]) -> str:
    """An image-map target: an image name, or a directory with a Dockerfile, built
    (cached by content) and named by its tag."""
    from gem_eval.sandbox.images import build_image

    if "/" in target and (Path(target) / "Dockerfile").is_file():
        return build_image(Path(target), log=log)
    return target


def check_available(spec: SandboxSpec) -> None:
    """Raise :class:`SandboxUnavailableError` (one line) when ``spec`` cannot work here:
    no Docker SDK, engine or image; no bubblewrap."""
    if spec.type == "docker":
        from docker import errors

        from gem_eval.sandbox import docker_client
        from gem_eval.sandbox.images import BASE_IMAGE

        images = [spec.image or BASE_IMAGE] + [s.image or str(s.build) for s in spec.sidecars]
        for image in images:
            try:
                docker_client.client().images.get(image)
            except errors.ImageNotFound:
                hint = (
                    "build it with `gem-eval sandbox build-base`"
                    if image == BASE_IMAGE
                    else "build or load it first (no registry is used)"
                )
                raise SandboxUnavailableError(f"Docker image {image!r} not found: {hint}") from None
            except errors.APIError as exc:
                if exc.status_code != 400:
                    raise
                raise SandboxUnavailableError(
                    f"Docker image {image!r} is no image name: {exc.explanation}"
                ) from None
    elif spec.type == "local" and not spec.unsafe and shutil.which("bwrap") is None:
        raise SandboxUnavailableError(
            "bubblewrap (bwrap) is not installed: apt-get install bubblewrap, or set "
            "sandbox: {type: local, unsafe: true} (no isolation)"
        )
