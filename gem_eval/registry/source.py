"""Where a registry is read from, and reading it: a file, a ``file://`` URL or an HTTP(S) URL.

The registry used is, first given: the ``source`` passed in (``--registry``),
``$GEM_EVAL_REGISTRY``, :data:`DEFAULT_REGISTRY` (Harbor's). Light to import: the command
line shows the default from here.
"""

from __future__ import annotations

import os
from pathlib import Path

from gem_eval.errors import RegistryError

DEFAULT_REGISTRY = "https://raw.githubusercontent.com/laude-institute/harbor/main/registry.json"
"""Harbor's registry (``harbor.constants.DEFAULT_REGISTRY_URL``)."""

ENV_VAR = "GEM_EVAL_REGISTRY"
"""The variable naming the registry when none is given."""

_TIMEOUT_S = 30.0


def registry_source(given: str | None = None) -> str:
    """The registry to read: ``given``, else ``$GEM_EVAL_REGISTRY``, else Harbor's."""
    return given or os.environ.get(ENV_VAR) or DEFAULT_REGISTRY


def is_url(source: str) -> bool:
    """Whether ``source`` is an HTTP(S) URL (else a file, or a ``file://`` URL)."""
    return source.startswith(("http://", "https://"))


def canonical(source: str) -> str:
    """``source`` as a manifest records it: a URL as given, a file as an absolute path."""
    return source if is_url(source) else str(_file(source).resolve())


def read_source(source: str) -> str:
    """The text of the registry at ``source``.

    Raises:
        RegistryError: The file or URL cannot be read.
    """
    if is_url(source):
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(source, timeout=_TIMEOUT_S) as response:
                data: bytes = response.read()
                return data.decode("utf-8")
        except (urllib.error.URLError, OSError, UnicodeDecodeError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise RegistryError(f"cannot read registry {source}: {reason}") from None
    path = _file(source)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RegistryError(f"cannot read registry {source}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RegistryError(f"cannot read registry {source}: {exc}") from None


def _file(source: str) -> Path:
    if source.startswith("file://"):
        from urllib.parse import urlparse
        from urllib.request import url2pathname

        return Path(url2pathname(urlparse(source).path))
    return Path(source).expanduser()
