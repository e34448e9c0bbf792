"""The report's data and page without a browser: the same leaderboard as the JSON one,
every transcript readable, nothing fetched from a network."""

from __future__ import annotations

import json
import re
from pathlib import Path

from gem_eval.report.data import SUMMARY_FIELDS, pack, unpack
from tests.report.conftest import Recorded
from tests.report.recorded import gem_eval


def page_blob(page: str, element: str) -> object:
    match = re.search(f'<script type="application/json" id="{element}">(.*?)</script>', page, re.S)
    assert match, element
    return json.loads(match.group(1))


def test_report_holds_the_json_leaderboard_and_every_transcript(
    recorded: Recorded, tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    done = gem_eval(
        "report", recorded.base, recorded.new, "--out", str(out), results=recorded.results
    )
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    data = page_blob(page, "gem-data")
    assert isinstance(data, dict)
    for by in ("model", "task", "category"):
        board = gem_eval(
            "leaderboard", recorded.base, recorded.new, "--by", by, "-f", "json",
            results=recorded.results,
        )  # fmt: skip
        assert board.returncode == 0, board.stderr
        assert data["boards"][by] == json.loads(board.stdout)
    assert data["gate"]["status"] == "pass"  # two runs of the same deterministic models
    transcripts = page_blob(page, "gem-transcripts")
    assert isinstance(transcripts, list)
    assert len(transcripts) == len(data["episodes"]) == 2 * 20
    key = SUMMARY_FIELDS.index("key")
    for row, blob in zip(data["episodes"], transcripts):
        t = unpack(blob)
        assert t["record"]["key"] == row[key]
        assert len(t["returns"]) == len(t["steps"]) and t["messages"]


def test_report_needs_no_network(recorded: Recorded, tmp_path: Path) -> None:
    out = tmp_path / "one.html"
    assert gem_eval("report", "latest", "-o", str(out), results=recorded.results).returncode == 0
    page = out.read_text()
    assert not re.search(r"<(script|link|img|iframe)[^>]*(src|href)=", page)
    assert not re.search(r"(url\(|@import)\s*['\"]?https?:", page)


def test_pack_round_trips_text_a_script_element_cannot_hold() -> None:
    value = {"content": "</script><!-- é 𝄞", "n": [1, 2.5, None]}
    assert unpack(pack(value)) == value


def test_pack_writes_what_json_cannot_hold_as_null() -> None:
    assert unpack(pack({"f1": float("nan"), "r": [float("inf"), 1.0]})) == {
        "f1": None,
        "r": [None, 1.0],
    }
