"""The ``search`` tool: the BM25 index and its cache, the HTTP backend against a real local
server, the tool's output, the kit's settings, and a search inside an agent episode."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gem_eval.agent import run_episode
from gem_eval.agent.tool_calls import from_text
from gem_eval.errors import MissingAPIKeyError, UserError
from gem_eval.models import ModelOutput, ScriptedModel, tool_call
from gem_eval.tools.kit import build_kit
from gem_eval.tools.search import (
    BM25Backend,
    Hit,
    HTTPSearchBackend,
    SearchBackend,
    SearchKit,
    SearchTool,
    match_expression,
)
from tests.fakes import FakeEnv

CORPUS = Path(__file__).resolve().parents[2] / "tasks" / "data" / "search" / "corpus.jsonl"

# FTS5 query syntax a model might write, on purpose or not.
NASTY_QUERIES = [
    "",
    "   ",
    '"',
    '"unterminated phrase',
    "title:",
    "title:Verran",
    "text : lighthouse",
    "AND",
    "OR OR OR",
    "NOT",
    "Verran AND NOT Lighthouse",
    "NEAR(Verran Lighthouse, 2)",
    "NEAR",
    "(((",
    ")",
    "{title text}: Quessel",
    "lighthouse*",
    "*",
    "-granite",
    "^Verran",
    "+",
    "a_b",
    "_",
    "'; DROP TABLE docs; --",
    "\x00",
    "\ud800 lone surrogate",
    "Quessel\u0301",
    "🙂 lighthouse 🙂",
    "½ ² ①",
    "x" * 5000,
    " ".join(f"w{i}" for i in range(500)),
]


def write_jsonl(path: Path, docs: list[Any]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def search(backend: SearchBackend, query: str, k: int = 3) -> list[Hit]:
    return asyncio.run(backend.search(query, k))


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> BM25Backend:
    """The shipped corpus, indexed once for the module."""
    return BM25Backend(CORPUS, cache_dir=tmp_path_factory.mktemp("cache"))


# --- The index ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "doc_id", "fact"),
    [
        ("Who built the Verran Lighthouse on Quessel?", "verran-lighthouse", "Odile Marchetti"),
        ("In which year was the lighthouse on Quessel built?", "verran-lighthouse", "1873"),
        ("In which town was Odile Marchetti born?", "odile-marchetti", "Castelvey"),
        ("What TCP port does the Kestrel Sync Protocol use?", "kestrel-sync-protocol", "7419"),
        ("Who made the first ascent of Mount Tessaly?", "mount-tessaly", "Ilse Garrow"),
        ("Who deciphered the Marrowfield Cipher, and when?", "marrowfield-cipher", "1987"),
        ("How many breeding pairs of Amberly petrels were counted?", "amberly-petrel", "610"),
    ],
)
def test_the_planted_document_is_the_top_hit_for_a_question(
    shipped: BM25Backend, question: str, doc_id: str, fact: str
) -> None:
    hits = search(shipped, question)
    assert hits[0].id == doc_id
    assert fact in hits[0].text
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_a_title_match_outranks_the_same_words_in_the_text(tmp_path: Path) -> None:
    corpus = write_jsonl(
        tmp_path / "c.jsonl",
        [
            {"id": "a", "title": "Granite", "text": "A short note about harbour building."},
            {"id": "b", "title": "Harbour", "text": "A short note about granite building."},
        ],
    )
    backend = BM25Backend(corpus, cache_dir=tmp_path / "cache")
    assert [h.id for h in search(backend, "harbour")] == ["b", "a"]
    assert [h.id for h in search(backend, "granite")] == ["a", "b"]


def test_the_index_is_cached_and_rebuilt_when_the_corpus_changes(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"title": "One", "text": "alpha"}])
    first = BM25Backend(corpus, cache_dir=cache)
    assert first.built and first.index_path.is_file()
    mtime = first.index_path.stat().st_mtime_ns
    time.sleep(0.01)
    again = BM25Backend(corpus, cache_dir=cache)
    assert not again.built
    assert again.index_path == first.index_path
    assert again.index_path.stat().st_mtime_ns == mtime
    assert [h.title for h in search(again, "alpha")] == ["One"]

    write_jsonl(corpus, [{"title": "One", "text": "alpha"}, {"title": "Two", "text": "beta"}])
    changed = BM25Backend(corpus, cache_dir=cache)
    assert changed.built and changed.index_path != first.index_path
    assert changed.documents == 2
    assert [h.title for h in search(changed, "beta")] == ["Two"]
    # Other field settings index different text: their own index.
    renamed = BM25Backend(corpus, cache_dir=cache, title_field="name")
    assert renamed.built and renamed.index_path != changed.index_path


def test_concurrent_builds_leave_one_whole_index_and_no_temporary_files(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with ThreadPoolExecutor(4) as pool:
        backends = list(pool.map(lambda _: BM25Backend(CORPUS, cache_dir=cache), range(4)))
    assert {b.index_path for b in backends} == {backends[0].index_path}
    name = backends[0].index_path.name
    assert sorted(p.name for p in cache.iterdir()) == [f".{name}.lock", name]
    assert search(backends[0], "Verran Lighthouse")[0].id == "verran-lighthouse"


def test_a_damaged_index_file_is_rebuilt(tmp_path: Path) -> None:
    first = BM25Backend(CORPUS, cache_dir=tmp_path)
    first.index_path.write_bytes(b"not a database")
    again = BM25Backend(CORPUS, cache_dir=tmp_path)
    assert again.built and search(again, "Quessel ferry")[0].id == "quessel"


def test_the_cache_dir_defaults_to_gem_eval_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEM_EVAL_CACHE", str(tmp_path))
    backend = BM25Backend(CORPUS)
    assert backend.index_path.parent == tmp_path / "search"


@pytest.mark.parametrize("query", NASTY_QUERIES)
def test_queries_with_fts5_syntax_never_raise(shipped: BM25Backend, query: str) -> None:
    hits = search(shipped, query)
    assert isinstance(hits, list) and len(hits) <= 3


def test_query_syntax_is_read_as_words(shipped: BM25Backend) -> None:
    assert search(shipped, "Verran AND NOT Lighthouse")[0].id == "verran-lighthouse"
    assert search(shipped, 'title:"Kestrel" (port)')[0].id == "kestrel-sync-protocol"
    assert search(shipped, "the of and") != []  # only stopwords: still searched


SYNTAX = ["AND", "OR", "NOT", "NEAR", "NEAR(", "title:", "text", "Verran", "_", "é", "1873"]
SYNTAX += list("\"'():*^-+{},.")
query_text = st.one_of(
    st.text(),
    st.lists(st.sampled_from(SYNTAX)).map(" ".join),
    st.lists(st.sampled_from(SYNTAX)).map("".join),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query_text)
def test_arbitrary_query_text_never_raises(shipped: BM25Backend, query: str) -> None:
    hits = search(shipped, query)
    assert len(hits) <= 3 and all(isinstance(h, Hit) for h in hits)


def test_match_expression_quotes_words_and_drops_stopwords() -> None:
    assert match_expression('Who built "Verran" (AND) lighthouse?') == (
        '"built" OR "verran" OR "lighthouse"'
    )
    assert match_expression("the of") == '"the" OR "of"'
    assert match_expression("()*:-^\"'") is None
    assert match_expression("_ __") is None


def test_custom_field_names_and_default_ids(tmp_path: Path) -> None:
    corpus = write_jsonl(
        tmp_path / "c.jsonl",
        [
            {"key": "k1", "name": "Otter", "body": "Otters hold hands.", "link": "https://o.test"},
            {"name": "Heron", "body": "Herons stand still."},
        ],
    )
    backend = BM25Backend(
        corpus,
        title_field="name",
        text_field="body",
        id_field="key",
        url_field="link",
        cache_dir=tmp_path,
    )
    otter, heron = search(backend, "otters hands")[0], search(backend, "herons")[0]
    assert (otter.id, otter.title, otter.url) == ("k1", "Otter", "https://o.test")
    assert (heron.id, heron.url) == ("2", None)  # the line number


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"text": "ok"}', "", '{"text": "broken"'], "c.jsonl:3: invalid JSON"),
        (['["a list"]'], "c.jsonl:1: expected a JSON object, got list"),
        (['{"title": "no text"}'], "c.jsonl:1: field 'text' must be a non-empty string"),
        (['{"text": "  "}'], "c.jsonl:1: field 'text' must be a non-empty string"),
        (['{"text": "a", "title": 3}'], "c.jsonl:1: field 'title' must be a string"),
        (['{"id": "x", "text": "a"}', '{"id": "x", "text": "b"}'], "c.jsonl:2: duplicate id 'x'"),
        (['{"id": 1.5, "text": "a"}'], "c.jsonl:1: field 'id' must be"),
        (['{"text": "\\ud800"}'], "c.jsonl:1: field 'text' holds a lone surrogate"),
        (["", "  "], "c.jsonl: the corpus has no documents"),
    ],
)
def test_a_bad_corpus_line_is_a_user_error_naming_file_and_line(
    tmp_path: Path, lines: list[str], message: str
) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(UserError) as info:
        BM25Backend(corpus, cache_dir=tmp_path / "cache")
    assert message in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_corpus_bytes_that_are_not_utf8_are_reported_by_line(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_bytes(b'{"text": "ok"}\n{"text": "\xff"}\n')
    with pytest.raises(UserError, match=r"c\.jsonl:2: not valid UTF-8"):
        BM25Backend(corpus, cache_dir=tmp_path)


def test_a_missing_corpus_names_its_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(UserError, match=r"search corpus not found: .*nope\.jsonl"):
        BM25Backend(missing, cache_dir=tmp_path)
    with pytest.raises(UserError, match=r"nope\.jsonl"):
        build_kit("search", {"corpus": str(missing), "cache_dir": str(tmp_path)})


def test_concurrent_searches_share_one_backend(shipped: BM25Backend) -> None:
    async def many() -> list[list[Hit]]:
        queries = ["Verran Lighthouse", "Kestrel port", "Lake Ormund char"] * 10
        return await asyncio.gather(*(shipped.search(q, 1) for q in queries))

    tops = [hits[0].id for hits in asyncio.run(many())]
    assert tops == ["verran-lighthouse", "kestrel-sync-protocol", "lake-ormund"] * 10


# --- The tool ----------------------------------------------------------------------------


def call(tool: SearchTool, **args: Any) -> Any:
    return asyncio.run(tool.call(args))


def test_the_tool_numbers_results_and_cuts_long_text(shipped: BM25Backend) -> None:
    tool = SearchTool(shipped, k=2, max_chars=80)
    result = call(tool, query="Verran Lighthouse on Skerry Point")
    assert not result.is_error
    first, second = result.output.split("\n\n")
    title, text = first.split("\n")
    assert title == "[1] Verran Lighthouse"
    assert text.endswith(" ...") and len(text) <= 84
    assert text.startswith("The Verran Lighthouse stands on Skerry Point")
    assert second.startswith("[2] ")
    assert result.metadata["hits"][0]["id"] == "verran-lighthouse"


def test_the_model_may_ask_for_more_results_up_to_max_k(shipped: BM25Backend) -> None:
    tool = SearchTool(shipped, k=1, max_k=4)
    assert call(tool, query="Quessel").output.count("\n[") == 0
    assert call(tool, query="Quessel", k=3).output.count("\n\n[") == 2
    assert call(tool, query="Quessel", k=50).output.count("\n\n[") == 3
    assert call(tool, query="Quessel", k=0).output.startswith("[1] ")


def test_no_results_and_empty_queries(shipped: BM25Backend) -> None:
    tool = SearchTool(shipped)
    assert call(tool, query="xyzzyplugh").output == "No results."
    assert call(tool, query="()*").output == "No results."
    empty = call(tool, query="  ")
    assert empty.is_error and "empty" in empty.output


def test_the_text_protocol_tag_fills_the_query(shipped: BM25Backend) -> None:
    tool = SearchTool(shipped)
    [parsed] = from_text('Let me look. <search>Verran "Lighthouse" (1873)</search>', [tool])
    assert parsed.name == "search"
    assert parsed.arguments == {"query": 'Verran "Lighthouse" (1873)'}
    assert tool.schema()["function"]["parameters"]["required"] == ["query"]


# --- The kit -----------------------------------------------------------------------------


def test_the_kit_builds_one_backend_and_a_tool_per_episode(tmp_path: Path) -> None:
    kit = build_kit("search", {"corpus": str(CORPUS), "k": 2, "cache_dir": str(tmp_path)})
    assert isinstance(kit, SearchKit) and isinstance(kit.backend, BM25Backend)
    assert kit.backend.built

    async def two_episodes() -> list[Any]:
        tools = [*(await kit.open(None)), *(await kit.open(None))]
        await kit.aclose()
        return tools

    one, two = asyncio.run(two_episodes())
    assert one is not two and one.backend is two.backend is kit.backend
    described = kit.describe()
    assert described["backend"] == "bm25" and described["documents"] == 52
    assert described["k"] == 2 and len(described["corpus_sha256"]) == 64
    again = SearchKit(corpus=str(CORPUS), cache_dir=str(tmp_path))
    assert isinstance(again.backend, BM25Backend) and not again.backend.built


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"backend": "htp", "url": "http://x"}, "unknown backend 'htp'.*Did you mean: http"),
        ({"corpus": "c", "titel_weight": 2}, "unknown setting 'titel_weight'.*title_weight"),
        ({"backend": "http", "url": "http://x", "corpus": "c"}, "corpus is a setting of"),
        ({}, "needs a corpus"),
        ({"backend": "http"}, "the http backend needs a url"),
        ({"corpus": "c", "k": 0}, "k must be a positive integer"),
        ({"corpus": "c", "k": 5, "max_k": 4}, r"k \(5\) must not exceed max_k \(4\)"),
        ({"corpus": "c", "max_chars": "80"}, "max_chars must be a positive integer"),
        ({"backend": "http", "url": "ftp://x"}, "url must be an http"),
        ({"backend": "http", "url": "http://x", "method": "PUT"}, "method must be GET or POST"),
        ({"backend": "http", "url": "http://x", "api_key": "a", "api_key_env": "B"}, "not both"),
    ],
)
def test_bad_kit_settings_are_one_line_user_errors(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message) as info:
        build_kit("search", settings)
    assert "\n" not in str(info.value) and str(info.value).startswith("tool 'search'")


# --- The HTTP backend, against a real local server ----------------------------------------


class _Handler(BaseHTTPRequestHandler):
    """``/brave`` answers Brave-shaped JSON; ``/post`` reads a JSON body; ``/fail`` is a 500;
    ``/slow`` answers late; ``/html`` answers a page."""

    server: _SearchServer

    def do_GET(self) -> None:
        self._answer(None)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        self._answer(json.loads(self.rfile.read(length)))

    def _answer(self, body: Any) -> None:
        self.server.requests.append(
            {"path": self.path, "headers": dict(self.headers), "body": body}
        )
        route = self.path.split("?")[0]
        if route == "/fail":
            return self._send(500, b'{"error": "boom"}')
        if route == "/slow":
            time.sleep(1.0)
        if route == "/html":
            return self._send(200, b"<html>hello</html>")
        results = [
            {"title": f"Result {n}", "description": f"Snippet {n}", "url": f"https://r.test/{n}"}
            for n in range(1, 6)
        ]
        reply = {"web": {"results": results}} if route != "/post" else {"data": results}
        return self._send(200, json.dumps(reply).encode())

    def _send(self, status: int, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _SearchServer(ThreadingHTTPServer):
    daemon_threads = True
    requests: list[dict[str, Any]]


@pytest.fixture
def server() -> Iterator[_SearchServer]:
    srv = _SearchServer(("127.0.0.1", 0), _Handler)
    srv.requests = []
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def base_url(srv: _SearchServer) -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}"


def test_http_results_are_mapped_and_the_key_is_a_header_never_described(
    server: _SearchServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_SEARCH_KEY", "sk-secret-123")
    backend = HTTPSearchBackend(
        f"{base_url(server)}/brave",
        api_key_env="TEST_SEARCH_KEY",
        api_key_header="X-Subscription-Token",
        api_key_prefix="",
        results_path="web.results",
        text_field="description",
        k_param="count",
        params={"safesearch": "strict"},
    )
    hits = search(backend, 'Verran "Lighthouse" & co', k=2)
    assert [(h.title, h.text, h.url) for h in hits] == [
        ("Result 1", "Snippet 1", "https://r.test/1"),
        ("Result 2", "Snippet 2", "https://r.test/2"),
    ]
    [request] = server.requests
    assert request["headers"]["X-Subscription-Token"] == "sk-secret-123"
    assert "q=Verran+%22Lighthouse%22+%26+co" in request["path"]
    assert "count=2" in request["path"] and "safesearch=strict" in request["path"]
    described = json.dumps(backend.describe())
    assert "sk-secret-123" not in described
    assert backend.describe()["api_key_env"] == "TEST_SEARCH_KEY"


def test_http_post_with_the_key_as_a_body_parameter(server: _SearchServer) -> None:
    backend = HTTPSearchBackend(
        f"{base_url(server)}/post",
        method="POST",
        api_key="sk-body-456",
        api_key_param="api_key",
        query_param="query",
        results_path="data",
        text_field="description",
    )
    tool = SearchTool(backend, k=1)
    result = call(tool, query="who built it")
    assert result.output == "[1] Result 1\nhttps://r.test/1\nSnippet 1"
    assert server.requests[0]["body"] == {"query": "who built it", "api_key": "sk-body-456"}
    assert "Authorization" not in server.requests[0]["headers"]
    assert "sk-body-456" not in json.dumps(backend.describe())


@pytest.mark.parametrize(
    ("route", "timeout", "message"),
    [
        ("/fail", 5.0, "HTTP 500"),
        ("/slow", 0.2, "timed out after 0.2s"),
        ("/html", 5.0, "not JSON"),
        ("/brave", 5.0, "no list of results at 'nowhere'"),
    ],
)
def test_http_failures_are_error_results_for_the_model(
    server: _SearchServer, route: str, timeout: float, message: str
) -> None:
    path = "nowhere" if route == "/brave" else "web.results"
    backend = HTTPSearchBackend(f"{base_url(server)}{route}", timeout=timeout, results_path=path)
    result = call(SearchTool(backend), query="anything")
    assert result.is_error and result.output.startswith("Error: search failed: ")
    assert message in result.output
    if route == "/fail":
        assert result.metadata["status"] == 500


def test_an_unreachable_search_api_is_an_error_result() -> None:
    backend = HTTPSearchBackend("http://127.0.0.1:9/search", timeout=2)
    result = call(SearchTool(backend), query="anything")
    assert result.is_error and "cannot reach the search API" in result.output


def test_a_missing_key_variable_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_SEARCH_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="NO_SUCH_SEARCH_KEY"):
        build_kit(
            "search", {"backend": "http", "url": "http://x", "api_key_env": "NO_SUCH_SEARCH_KEY"}
        )


# --- In an episode -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["native", "text"])
def test_a_model_searches_then_answers_in_an_episode(tmp_path: Path, mode: str) -> None:
    kit = SearchKit(corpus=str(CORPUS), cache_dir=str(tmp_path))
    question = "Who built the Verran Lighthouse?"
    first = (
        ModelOutput(tool_calls=[tool_call("search", {"query": question}, id="s1")])
        if mode == "native"
        else ModelOutput(text=f"<search>{question}</search>")
    )
    model = ScriptedModel([first, "Odile Marchetti"])

    async def episode() -> Any:
        tools = await kit.open(None)
        return await run_episode(FakeEnv(length=1), model, tools, tool_mode=mode)

    traj = asyncio.run(episode())
    assert traj.outcome == "completed"
    [event] = traj.steps[0].tool_events
    assert event.name == "search" and not event.is_error
    assert event.output.startswith("[1] Verran Lighthouse\n")
    assert "Odile Marchetti" in event.output
    assert "Verran Lighthouse" in model.calls[1][-1]["content"]
    assert traj.steps[1].action == "Odile Marchetti"
