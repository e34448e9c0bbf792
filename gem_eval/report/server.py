"""``gem-eval view``: a read-only web server over a results directory.

``/`` lists the runs (from the index); ``/run/<run id>`` is the report page of one run and
``/report?run=A&run=B`` of several, built on each request from the files as they are then,
through an index in memory: nothing under the results directory is written, not even
``index.sqlite``. Standard library only: :class:`http.server.ThreadingHTTPServer`.

The baseline of a comparison is the run ``base=`` names, else the oldest run: the order of
the ``run`` parameters is the order of the ticked boxes, newest first, and says nothing of
which run the user takes as the reference (``gem-eval report OLD NEW`` compares NEW
against OLD, and so does the page).
"""

from __future__ import annotations

import html
import time
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from gem_eval.errors import GemEvalError

_LIST = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>gem-eval runs</title>
<style>body{{font:14px/1.4 system-ui,sans-serif;margin:1em auto;max-width:1100px}}
td,th{{padding:.2em .6em;border-bottom:1px solid #eee;text-align:left;white-space:nowrap}}
table{{border-collapse:collapse}}</style></head><body><h1>gem-eval runs in {root}</h1>
<form action="/report"><table id="runs"><thead><tr><th>compare</th><th>baseline</th>
<th>run id</th><th>suite</th><th>models</th><th>status</th><th>episodes</th><th>started</th>
</tr></thead><tbody>{rows}</tbody></table>
<p><button type="submit">report of the ticked runs</button> (with two, the new one is
compared against the baseline: the one chosen, else the older)</p></form></body></html>
"""


class ResultsServer(ThreadingHTTPServer):
    """Serves one results directory. ``server_address`` holds the bound host and port
    (port 0 picks a free one)."""

    daemon_threads = True

    def __init__(self, results_dir: Path, host: str = "127.0.0.1", port: int = 0) -> None:
        self.results_dir = results_dir
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{name}]" if ":" in name else name
        return f"http://{shown}:{port}/"

    def runs(self) -> list[dict[str, Any]]:
        """Every run, oldest first, read from the run directories now."""
        from gem_eval.store import Index

        with Index(":memory:") as index:
            index.rebuild(self.results_dir)
            return index.runs()

    def report(self, run_ids: list[str], base: str | None = None) -> str:
        """The report page of ``run_ids``, oldest first: the baseline is ``base`` when
        given, else the oldest run.

        Raises:
            KeyError: An unknown run.
        """
        from gem_eval.report import report_html
        from gem_eval.store import Index, RunDir, list_run_ids

        wanted = list(dict.fromkeys([*([base] if base else []), *run_ids]))
        known = set(list_run_ids(self.results_dir))
        unknown = [r for r in wanted if r not in known]
        if unknown or not wanted:
            raise KeyError(", ".join(unknown) or "no run")
        with Index(":memory:") as index:
            for run_id in wanted:
                index.sync_run(RunDir(self.results_dir / run_id))
            ordered = [r["run_id"] for r in index.runs()]  # oldest first
            ordered.sort(key=lambda r: r != base)  # stable: the baseline, then by age
            return report_html(index, self.results_dir, ordered)


class _Handler(BaseHTTPRequestHandler):
    server: ResultsServer

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        try:
            if url.path == "/":
                self._send(HTTPStatus.OK, self._run_list())
            elif url.path.startswith("/run/"):
                run_id = urllib.parse.unquote(url.path.removeprefix("/run/"))
                self._send(HTTPStatus.OK, self.server.report([run_id]))
            elif url.path == "/report":
                query = urllib.parse.parse_qs(url.query)
                base = query.get("base", [None])[0]
                self._send(HTTPStatus.OK, self.server.report(query.get("run", []), base))
            elif url.path == "/favicon.ico":  # browsers ask; there is none
                self._send(HTTPStatus.NO_CONTENT, "")
            else:
                self._send(HTTPStatus.NOT_FOUND, "<h1>not found</h1>")
        except KeyError as exc:
            self._send(HTTPStatus.NOT_FOUND, f"<h1>no run {html.escape(str(exc))}</h1>")
        except GemEvalError as exc:
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, f"<h1>{html.escape(str(exc))}</h1>")

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the viewer's terminal shows its address, not every request."""

    def _run_list(self) -> str:
        rows = []
        for run in reversed(self.server.runs()):  # newest first
            rid = html.escape(run["run_id"])
            link = "/run/" + urllib.parse.quote(run["run_id"])
            started = run.get("started_at")
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(started)) if started else "-"
            rows.append(
                f'<tr><td><input type="checkbox" name="run" value="{rid}"></td>'
                f'<td><input type="radio" name="base" value="{rid}" title="the baseline"></td>'
                f'<td><a href="{html.escape(link)}">{rid}</a></td>'
                f"<td>{html.escape(str(run['suite']))}</td>"
                f"<td>{html.escape(', '.join(map(str, run['models'])))}</td>"
                f"<td>{html.escape(str(run['status']))}</td>"
                f"<td>{run['episodes_done']}/{run['episodes_planned']}</td><td>{when}</td></tr>"
            )
        root = html.escape(str(self.server.results_dir))
        return _LIST.format(root=root, rows="".join(rows))

    def _send(self, status: HTTPStatus, body: str) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)
