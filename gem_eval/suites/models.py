"""Models named with their settings in a file: a suite's ``models:`` key, or a models file
given with ``--models`` (the same list under ``models:``), so CI needs no long command line.

.. code-block:: yaml

    models:
      - openai/gpt-5                         # a name alone: the defaults
      - name: hosted_vllm/ckpt-1200
        base_url: http://gpu-1:8000/v1       # ${VAR} and $VAR are read from the environment
        backend: openai
        api_key_env: VLLM_KEY
      - name: hosted_vllm/ckpt-1400
        base_url: ${CKPT_1400_URL}
        args: {temperature: 0.7}             # its generation settings (-M)

A run uses them when no ``--model`` is given (``${VAR}`` is read then, not when the suite
is loaded). Connection options on the command line (given before any ``--model``) apply
over every listed model's own.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from gem_eval.records import ModelSpec
from gem_eval.suites.schema import Loc, ModelEntry, SuiteError
from gem_eval.suites.yaml_doc import YamlDoc, read_yaml

_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


class ModelsFile(BaseModel):
    """A models file: ``models:`` and nothing else."""

    model_config = ConfigDict(extra="forbid", strict=True)

    models: list[str | ModelEntry] = Field(min_length=1)


def model_specs(entries: list[str | ModelEntry], doc: YamlDoc, loc: Loc) -> list[ModelSpec]:
    """The entries at ``loc`` of ``doc`` as model specs, base URLs as written (``${VAR}``
    is read when the list is used: :func:`expand_models`).

    Raises:
        SuiteError: A name listed twice, an unknown backend, bad generation settings.
    """
    from gem_eval.models.backends import BACKENDS
    from gem_eval.models.generation import check_generation

    specs: list[ModelSpec] = []
    for index, entry in enumerate(entries):
        at: Loc = (*loc, index)
        if isinstance(entry, str):
            if not entry.strip():
                raise doc.error(at, "a model needs a name")
            entry = ModelEntry(name=entry)
        else:
            at = (*at, "name")
        if entry.name in [s.name for s in specs]:
            raise doc.error(at, f"model {entry.name!r} is listed twice")
        values = entry.model_dump(exclude_none=True)
        if "backend" in values and values["backend"] not in BACKENDS:
            raise doc.error(
                (*loc, index, "backend"),
                f"unknown backend {values['backend']!r}: choose {' or '.join(BACKENDS)}",
            )
        for line in check_generation(entry.args, "args"):
            raise doc.error((*loc, index, "args"), line)
        specs.append(ModelSpec(**values))
    return specs


def expand_models(
    specs: list[ModelSpec], path: Path | None, key: str = "models"
) -> list[ModelSpec]:
    """``specs`` with ``${VAR}`` and ``$VAR`` in base URLs read from the environment, when
    a run is about to use them (a suite's list that this run does not use needs none of
    its variables; a resumed run keeps the URLs it played with).

    Raises:
        SuiteError: A variable is not set (``file:line`` of the entry, when known).
    """
    out = []
    for index, spec in enumerate(specs):
        if spec.base_url and _VARIABLE.search(spec.base_url):
            where = (key, index, "base_url")
            spec = spec.model_copy(update={"base_url": _expand(spec.base_url, path, where)})
        out.append(spec)
    return out


def load_models_file(path: str | Path) -> list[ModelSpec]:
    """The models a ``--models`` file lists.

    Raises:
        SuiteError: No such file, or an entry that does not validate (``file:line: ...``).
    """
    try:
        found = Path(path).is_file()
    except OSError as exc:  # a name the system refuses (too long)
        raise SuiteError(f"models file {str(path)!r}: {exc.strerror}") from None
    if not found:
        raise SuiteError(f"models file {str(path)!r} not found")
    doc = read_yaml(Path(path))
    parsed = doc.validate(ModelsFile)
    return expand_models(model_specs(parsed.models, doc, ("models",)), Path(path))


def _expand(value: str, path: Path | None, loc: Loc) -> str:
    def variable(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        found = os.environ.get(name)
        if found is None:
            message = f"${name} is not set in the environment"
            if path is None:
                raise SuiteError(f"{'.'.join(map(str, loc))}: {message}")
            raise read_yaml(path).error(loc, message)
        return found

    return _VARIABLE.sub(variable, value)
