"""The review page's HTTP server: Python's http.server on 127.0.0.1, one page with its CSS and
JavaScript inline (no external asset, so it works offline and through an SSH tunnel), and a small
JSON API the page calls:

- GET  /?token=T                the page
- GET  /judging.md?token=T      the judging guideline (docs/judging.md), as text
- GET  /api/state?annotator=A   progress and the next triple to judge
- POST /api/judge  {index, digest, verdict: good|bad|skip, error_type, reason, annotator}
  (digest: the one the state gave with the triple, so a verdict is on the sentences shown)
- POST /api/undo   {annotator}
Each POST answers with the new state; a judgement another tab made stale answers 409 with the
state, and the page shows it.

What it protects against (docs/review.md, "What the server protects against"): every request
must name the server by a loopback Host and its port (DNS rebinding), come from no other Origin
(a web page open in the same browser), and carry the session's random token (the page: in its
address; the API: in the X-Review-Token header, which no cross-site form or no-cors request can
set); bodies must declare a length up to MAX_BODY; fields are type-checked; every answer,
including every failure, is JSON with a status, framed by nothing (X-Frame-Options, a
Content-Security-Policy allowing only the page's own script and style).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import sys
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from transnli.review.errors import ReviewError
from transnli.review.log import GUIDELINE, MAX_REASON, Verdict
from transnli.review.session import Conflict, ReviewSession

PAGE = Path(__file__).with_name("page.html")
HOST = "127.0.0.1"
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
MAX_BODY = 1 << 16
TOKEN_HEADER = "X-Review-Token"
JUDGE_FIELDS = {"index", "digest", "verdict", "error_type", "reason", "annotator"}
UNDO_FIELDS = {"annotator"}


class Refused(Exception):
    """A request answered with `status` and a one-line reason."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def content_security_policy(page: str) -> str:
    """Only the page's own inline script and style (by hash), requests to its own origin, no
    frames, forms or base URL."""

    def hashes(tag: str) -> str:
        blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", page, flags=re.S)
        return " ".join(
            "'sha256-" + base64.b64encode(hashlib.sha256(b.encode()).digest()).decode() + "'"
            for b in blocks
        )

    return (
        f"default-src 'none'; script-src {hashes('script')}; style-src {hashes('style')}; "
        "connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )


def content_length(values: list[str]) -> int:
    """The body's declared length: required, one decimal number, at most MAX_BODY."""
    if not values:
        raise Refused(HTTPStatus.LENGTH_REQUIRED, "a Content-Length header is required")
    digits = values[0].strip()
    if len(set(values)) > 1 or not re.fullmatch(r"[0-9]+", digits):
        raise Refused(HTTPStatus.BAD_REQUEST, f"bad Content-Length {', '.join(values)[:40]!r}")
    if len(digits) > len(str(MAX_BODY)) or int(digits) > MAX_BODY:
        raise Refused(
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            f"request body over {MAX_BODY} bytes (Content-Length {digits[:20]})",
        )
    return int(digits)


def _fields(body: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise ReviewError(f"unknown field(s) {', '.join(unknown)[:80]}")


def _optional_str(body: dict[str, Any], name: str, limit: int) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise ReviewError(f"{name} must be a string or null (got {type(value).__name__})")
    if value is not None and len(value) > limit:
        raise ReviewError(f"{name} is longer than {limit} characters")
    return value


def judge_request(body: dict[str, Any]) -> tuple[Any, Verdict, Any, str]:
    """(index, verdict, annotator, digest) of a POST /api/judge body; types refused with one
    line (the session checks the index, the annotator's name and the digest against the triple)."""
    _fields(body, JUDGE_FIELDS)
    digest = body.get("digest")
    if not isinstance(digest, str):
        raise ReviewError(
            "digest must be the string the state gave with the triple "
            f"(got {type(digest).__name__})"
        )
    kind = body.get("verdict")
    if not isinstance(kind, str):
        raise ReviewError(f"verdict must be a string (got {type(kind).__name__})")
    verdict = Verdict(
        kind,
        _optional_str(body, "error_type", 40),
        _optional_str(body, "reason", MAX_REASON) or "",
    )
    return body.get("index"), verdict, body.get("annotator"), digest


class ReviewHandler(BaseHTTPRequestHandler):
    server: ReviewServer
    error_content_type = "application/json"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass  # one line per keypress would bury the URL the command printed

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Content-Security-Policy", self.server.csp)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, doc: Any) -> None:
        self._send(status, json.dumps(doc, ensure_ascii=False).encode(), "application/json")

    def send_error(self, code: int, message: str | None = None, explain: str | None = None):
        """http.server's own refusals (a bad request line, an unsupported method) as JSON too."""
        self.close_connection = True
        self._json(code, {"error": message or HTTPStatus(code).phrase})

    def _check_origin(self) -> None:
        """Only this server, by a loopback name and its port, and no other site's page."""
        port = self.server.server_address[1]
        hosts = {f"{h}:{port}" for h in LOOPBACK}
        host = (self.headers.get("Host") or "").strip().lower()
        if host not in hosts:
            raise Refused(HTTPStatus.FORBIDDEN, f"Host {host[:60]!r} is not this review server")
        origin = self.headers.get("Origin")
        if origin is not None and origin.strip().lower() not in {f"http://{h}" for h in hosts}:
            raise Refused(HTTPStatus.FORBIDDEN, f"requests from {origin[:60]!r} are not allowed")

    def _check_token(self, given: str | None) -> None:
        if not given or not hmac.compare_digest(given.encode(), self.server.token.encode()):
            raise Refused(
                HTTPStatus.FORBIDDEN,
                "missing or wrong session token: open the address `transnli review` printed",
            )

    def _handle(self, route) -> None:
        """Run `route`; any failure answers JSON: a refusal or a bad request its status and
        reason, anything unexpected 500 (one line on stderr too), never a dropped connection."""
        try:
            try:
                self._check_origin()
                route()
            except Refused as e:
                self.close_connection = True  # an unread body must not be taken for a request
                self._json(e.status, {"error": str(e)})
            except Conflict as e:
                self._json(HTTPStatus.CONFLICT, {**self._state(e.annotator), "error": str(e)})
            except ReviewError as e:
                self._json(HTTPStatus.BAD_REQUEST, {"error": str(e)})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away: no one to answer
        except Exception as e:  # noqa: BLE001 - the page must get an answer, whatever failed
            print(f"review server: {type(e).__name__}: {e}", file=sys.stderr)
            self.close_connection = True
            self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(e).__name__}: {e}"})

    def _state(self, annotator: Any) -> dict[str, Any]:
        return self.server.session.state(annotator)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._handle(self._get)

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
        self._handle(self._get)

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self._handle(self._post)

    def _get(self) -> None:
        url = urlparse(self.path)
        query = parse_qs(url.query)
        if url.path in ("/", "/judging.md"):
            self._check_token(query.get("token", [None])[0])
            if url.path == "/":
                self._send(HTTPStatus.OK, self.server.page, "text/html; charset=utf-8")
            elif GUIDELINE.is_file():
                self._send(HTTPStatus.OK, GUIDELINE.read_bytes(), "text/plain; charset=utf-8")
            else:
                raise Refused(HTTPStatus.NOT_FOUND, f"{GUIDELINE} is not in this installation")
            return
        self._check_token(self.headers.get(TOKEN_HEADER))
        if url.path == "/api/state":
            who = query.get("annotator", [None])[0]
            self._json(HTTPStatus.OK, self._state(who))
        else:
            raise Refused(HTTPStatus.NOT_FOUND, f"no such path {url.path[:60]}")

    def _post(self) -> None:
        self._check_token(self.headers.get(TOKEN_HEADER))
        if self.headers.get("Transfer-Encoding") is not None:
            raise Refused(HTTPStatus.LENGTH_REQUIRED, "send the body with a Content-Length")
        length = content_length(self.headers.get_all("Content-Length") or [])
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except (ValueError, UnicodeDecodeError) as e:
            raise ReviewError(f"bad request body: {e}") from e
        if not isinstance(body, dict):
            raise ReviewError("bad request body: expected a JSON object")
        path = urlparse(self.path).path
        session = self.server.session
        if path == "/api/judge":
            index, verdict, who, digest = judge_request(body)
            session.judge(index, verdict, who, digest)
            self._json(HTTPStatus.OK, self._state(who))
        elif path == "/api/undo":
            _fields(body, UNDO_FIELDS)
            who = body.get("annotator")
            undone = session.undo(who)
            self._json(HTTPStatus.OK, {**self._state(who), "undone": undone})
        else:
            raise Refused(HTTPStatus.NOT_FOUND, f"no such path {path[:60]}")


class ReviewServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, session: ReviewSession, port: int = 0, host: str = HOST, token: str | None = None
    ):
        self.session = session
        self.page = PAGE.read_bytes()
        self.csp = content_security_policy(self.page.decode("utf-8"))
        self.token = token or secrets.token_urlsafe(32)
        super().__init__((host, port), ReviewHandler)

    @property
    def url(self) -> str:
        """The page's address, with the session's token: the one way in."""
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/?token={self.token}"
