"""The review page's HTTP server: Python's http.server on 127.0.0.1, one page with its CSS and
JavaScript inline (no external asset, so it works offline and through an SSH tunnel), and a small
JSON API the page calls:

- GET  /                       the page
- GET  /api/state?annotator=A  progress and the next triple to judge
- POST /api/judge  {index, verdict: good|bad|skip, error_type, reason, annotator}
- POST /api/undo   {annotator}
Each POST answers with the new state; a judgement another tab made stale answers 409 with the
state, and the page shows it.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from transnli.review.errors import ReviewError
from transnli.review.log import Verdict
from transnli.review.session import Conflict, ReviewSession

PAGE = Path(__file__).with_name("page.html")
HOST = "127.0.0.1"
MAX_BODY = 1 << 16


class ReviewHandler(BaseHTTPRequestHandler):
    server: ReviewServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass  # one line per keypress would bury the URL the command printed

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, doc: Any) -> None:
        self._send(status, json.dumps(doc, ensure_ascii=False).encode(), "application/json")

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        url = urlparse(self.path)
        if url.path == "/":
            self._send(HTTPStatus.OK, self.server.page, "text/html; charset=utf-8")
        elif url.path == "/api/state":
            who = parse_qs(url.query).get("annotator", [None])[0]
            self._guarded(lambda: (HTTPStatus.OK, self.server.session.state(who)))
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such path {url.path}"})

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._json(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"error": "request too large"})
            return
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
            if not isinstance(body, dict):
                raise ValueError("expected a JSON object")
        except ValueError as e:
            self._json(HTTPStatus.BAD_REQUEST, {"error": f"bad request body: {e}"})
            return
        path = urlparse(self.path).path
        if path == "/api/judge":
            self._guarded(lambda: self._judge(body))
        elif path == "/api/undo":
            self._guarded(lambda: self._undo(body))
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such path {path}"})

    def _judge(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        verdict = Verdict(
            str(body.get("verdict", "")), body.get("error_type"), str(body.get("reason") or "")
        )
        who = body.get("annotator")
        try:
            self.server.session.judge(body.get("index"), verdict, who)
        except Conflict as e:
            return HTTPStatus.CONFLICT, {**self.server.session.state(who), "error": str(e)}
        return HTTPStatus.OK, self.server.session.state(who)

    def _undo(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        who = body.get("annotator")
        undone = self.server.session.undo(who)
        return HTTPStatus.OK, {**self.server.session.state(who), "undone": undone}

    def _guarded(self, action) -> None:
        """Run an API action; a bad request answers 400 with the one-line reason."""
        try:
            status, doc = action()
        except ReviewError as e:
            status, doc = HTTPStatus.BAD_REQUEST, {"error": str(e)}
        self._json(status, doc)


class ReviewServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, session: ReviewSession, port: int = 0, host: str = HOST):
        self.session = session
        self.page = PAGE.read_bytes()
        super().__init__((host, port), ReviewHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/"
