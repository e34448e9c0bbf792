"""``CastRecorder``: a terminal session recorded as an asciinema v2 cast.

The asciicast v2 format (docs.asciinema.org/manual/asciicast/v2) is newline-delimited
JSON: a header object (``version`` 2, ``width``, ``height``; here also ``timestamp``,
``title`` and ``env``) on the first line, then one event per line, ``[time, code,
data]``, with ``time`` in seconds since the recording began. The recorder writes ``"o"``
events (what the terminal printed, as it printed it, escape sequences included), ``"i"``
events (the keys sent, as the bytes a terminal would send for them) and ``"m"`` markers
(a session restarted, the recording cut). ``asciinema play`` and the web player replay
it as it happened.

The pane's output arrives as bytes in arbitrary chunks; an incremental decoder keeps a
UTF-8 character split across chunks whole. A recording stops taking output past
``limit`` bytes (one marker says so), so a runaway program cannot fill the run
directory.
"""

from __future__ import annotations

import codecs
import json
import time
from typing import Any

DEFAULT_LIMIT = 8 * 1024 * 1024

# The bytes a terminal sends for tmux's key names (the ones an agent uses; others are
# left out of the "i" events rather than guessed).
_KEY_BYTES = {
    "Enter": "\r",
    "C-m": "\r",
    "KPEnter": "\r",
    "C-j": "\n",
    "Escape": "\x1b",
    "Tab": "\t",
    "BSpace": "\x7f",
    "Space": " ",
    "Up": "\x1b[A",
    "Down": "\x1b[B",
    "Right": "\x1b[C",
    "Left": "\x1b[D",
    "Home": "\x1b[1~",
    "End": "\x1b[4~",
    "PageUp": "\x1b[5~",
    "PPage": "\x1b[5~",
    "PageDown": "\x1b[6~",
    "NPage": "\x1b[6~",
    "DC": "\x1b[3~",
    "Delete": "\x1b[3~",
}


def key_bytes(key: str, *, literal: bool = False) -> str | None:
    """What a terminal sends for one ``send-keys`` argument: the text itself, or the
    bytes of a key name (``C-c`` is ``\\x03``); ``None`` for a key name not known here."""
    if literal:
        return key
    if key in _KEY_BYTES:
        return _KEY_BYTES[key]
    control = key[2:] if key.startswith("C-") else key[1:] if key.startswith("^") else ""
    if len(control) == 1 and control.isalpha():
        return chr(ord(control.lower()) - ord("a") + 1)
    if len(key) == 3 and key[:2] == "M-":
        return "\x1b" + key[2]
    return key if not _looks_like_key_name(key) else None


def _looks_like_key_name(key: str) -> bool:
    return key[:2] in ("C-", "M-", "S-") or (key[:1] == "F" and key[1:].isdigit())


class CastRecorder:
    """Collects one session's events (see the module docstring).

    Args:
        width: The terminal's columns.
        height: The terminal's rows.
        title: The header's title.
        env: The header's ``env`` (``TERM``, ``SHELL``).
        limit: Bytes of output events kept; past it, one ``"m"`` marker and no more.
    """

    def __init__(
        self,
        width: int,
        height: int,
        *,
        title: str | None = None,
        env: dict[str, str] | None = None,
        limit: int = DEFAULT_LIMIT,
    ) -> None:
        self.header: dict[str, Any] = {
            "version": 2,
            "width": width,
            "height": height,
            "timestamp": int(time.time()),
        }
        if title:
            self.header["title"] = title
        if env:
            self.header["env"] = dict(env)
        self.limit = limit
        self._start = time.monotonic()
        self._events: list[tuple[float, str, str]] = []
        self._size = 0
        self._cut = False
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def elapsed(self) -> float:
        """Seconds since the recording began."""
        return time.monotonic() - self._start

    def output(self, data: bytes) -> None:
        """The terminal printed ``data``."""
        text = self._decoder.decode(data)
        if text:
            self._add("o", text)

    def input(self, keys: list[str], *, literal: bool = False) -> None:
        """Keys were sent (tmux key names or text, as ``send-keys`` takes them)."""
        sent = [key_bytes(k, literal=literal) for k in keys]
        text = "".join(s for s in sent if s)
        if text:
            self._add("i", text)

    def marker(self, label: str) -> None:
        """A labelled point in the recording (a player can jump to it)."""
        self._events.append((self.elapsed(), "m", label))

    def _add(self, code: str, text: str) -> None:
        if self._cut:
            return
        size = len(text.encode())
        if self._size + size > self.limit:
            self._cut = True
            self.marker(f"recording cut: more than {self.limit} bytes")
            return
        self._size += size
        self._events.append((self.elapsed(), code, text))

    def text(self) -> str:
        """The cast file's text (header line, then one line per event)."""
        lines = [json.dumps(self.header, ensure_ascii=False)]
        lines += [json.dumps([round(t, 6), c, d], ensure_ascii=False) for t, c, d in self._events]
        return "\n".join(lines) + "\n"


def read_cast(text: str) -> tuple[dict[str, Any], list[tuple[float, str, str]]]:
    """Parse an asciicast v2 file: its header and events.

    Raises:
        ValueError: The text is not a valid v2 cast (what is wrong and on which line).
    """
    lines = text.splitlines()
    if not lines:
        raise ValueError("empty cast")
    header = json.loads(lines[0])
    if not isinstance(header, dict) or header.get("version") != 2:
        raise ValueError("line 1: the header must be an object with version 2")
    for key in ("width", "height"):
        if not isinstance(header.get(key), int) or header[key] <= 0:
            raise ValueError(f"line 1: header {key} must be a positive integer")
    events: list[tuple[float, str, str]] = []
    last = 0.0
    for number, line in enumerate(lines[1:], start=2):
        event = json.loads(line)
        if not (
            isinstance(event, list)
            and len(event) == 3
            and isinstance(event[0], int | float)
            and isinstance(event[1], str)
            and isinstance(event[2], str)
        ):
            raise ValueError(f"line {number}: an event is [time, code, data]")
        if event[0] < last:
            raise ValueError(f"line {number}: time goes back ({event[0]} < {last})")
        last = float(event[0])
        events.append((last, event[1], event[2]))
    return header, events
