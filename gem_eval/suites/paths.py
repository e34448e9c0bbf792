"""The files and directories a suite names, found: relative to the file naming them,
then the bundled root (:func:`~gem_eval.bundled.bundled_root`: the checkout, or the
installed package's copy), then the working directory."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gem_eval.bundled import bundled_root
from gem_eval.errors import did_you_mean
from gem_eval.suites.layers import Layer, lookup, origin
from gem_eval.suites.schema import Loc
from gem_eval.suites.suite import merge_layers
from gem_eval.suites.yaml_doc import YamlDoc


def build_dir(layers: Sequence[Layer]) -> str:
    """``sandbox.build`` as an absolute directory holding a Dockerfile."""
    doc, loc = origin(layers, "sandbox", "build")
    name = str(lookup(merge_layers([layer.values for layer in layers]), ("sandbox", "build")))
    for base in (doc.path.parent, bundled_root(), Path.cwd()):
        if (base / name / "Dockerfile").is_file():
            return str((base / name).resolve())
    raise doc.error(loc, f"no Dockerfile in {name!r} (relative to {doc.shown})")


def absolute_paths(value: Any, bases: Sequence[Path], bare: bool = False) -> Any:
    """Strings naming an existing path relative to one of ``bases``, made absolute.
    Only strings with a ``/`` are tried unless ``bare`` (values that are paths by
    definition: a task directory, an image-map build directory)."""
    if isinstance(value, dict):
        return {k: absolute_paths(v, bases, bare) for k, v in value.items()}
    if isinstance(value, list):
        return [absolute_paths(v, bases, bare) for v in value]
    if (
        isinstance(value, str)
        and value
        and ("/" in value or bare)
        and not value.startswith(("/", "-", "http"))
    ):
        for base in bases:
            if (base / value).exists():
                return str((base / value).resolve())
    return value


def find_file(name: str, doc: YamlDoc, loc: Loc) -> Path:
    """A task file named in ``doc``: relative to it, then the bundled root, then the cwd."""
    relative = Path(name)
    bases = [Path("/")] if relative.is_absolute() else [doc.path.parent, bundled_root(), Path.cwd()]
    for base in bases:
        if (base / relative).is_file():
            return base / relative
    dirs = [(b / relative).parent for b in bases]
    nearby = {p.name for d in dirs if d.is_dir() for p in d.iterdir()}
    hint = did_you_mean(relative.name, nearby)
    raise doc.error((*loc, "file"), f"task file {name!r} not found{'.' + hint if hint else ''}")
