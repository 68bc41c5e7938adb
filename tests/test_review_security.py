"""The review server under attack and under bad requests (transnli.review.server): what another
web page, a rebound DNS name, a forged or malformed request can make it do. Each test drives one
attack and asserts that it is refused with a JSON answer and that review.jsonl is unchanged.
tests/test_review_browser.py drives the cross-site page in a real browser."""

from __future__ import annotations

import http.client
import json
import socket

import pytest
from test_export import make_run, record
from test_review import api, open_session, start_server
from transnli.review.log import LOG, triple_digest


@pytest.fixture
def run_dir(tmp_path):
    return make_run(tmp_path / "run", [record(i) for i in range(30)], [])


@pytest.fixture
def server(run_dir):
    server = start_server(open_session(run_dir, annotator="ann", sample=10, seed=0))
    yield server
    server.shutdown()
    server.server_close()


def raw(server, method, path, headers=None, body=b"", skip_host=False):
    """One request with exactly the headers given: (status, headers, JSON body)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=30)
    conn.putrequest(method, path, skip_host=skip_host, skip_accept_encoding=True)
    for name, value in (headers or {}).items():
        conn.putheader(name, value)
    conn.endheaders()
    if body:
        conn.send(body)
    res = conn.getresponse()
    data = res.read()
    conn.close()
    return res.status, res.headers, json.loads(data)


def judge_body(server, index, **over):
    """A verdict on record `index` as the page sends it (with the digest of what it shows)."""
    digest = triple_digest(server.session.index.record(index))
    return json.dumps({"index": index, "verdict": "good", "digest": digest, **over}).encode()


def authorised(server, body=b"", **extra):
    return {
        "X-Review-Token": server.token,
        "Content-Type": "application/json",
        "Content-Length": str(len(body)),
        **extra,
    }


def log_text(run_dir) -> str:
    path = run_dir / LOG
    return path.read_text() if path.exists() else ""


def test_the_url_carries_a_fresh_random_token(run_dir):
    a = start_server(open_session(run_dir))
    b = start_server(open_session(run_dir))
    try:
        assert a.token != b.token and len(a.token) >= 40
        assert a.url.endswith(f"/?token={a.token}")
    finally:
        for s in (a, b):
            s.shutdown()
            s.server_close()


def test_a_cross_site_no_cors_post_without_the_token_writes_nothing(server, run_dir):
    """What a page on another site can send: a "simple" POST (text/plain, no custom header), so
    no token; with or without its Origin."""
    first = server.session.order[0]
    body = judge_body(server, first)
    for origin in ("http://evil.example", None):
        headers = {"Content-Type": "text/plain", "Content-Length": str(len(body))}
        if origin:
            headers["Origin"] = origin
        status, _, doc = raw(server, "POST", "/api/judge", headers, body)
        assert status == 403 and "error" in doc
    status, _, doc = raw(
        server, "POST", "/api/judge", authorised(server, body, **{"X-Review-Token": "guess"}), body
    )
    assert status == 403 and "token" in doc["error"]
    assert log_text(run_dir) == ""
    # The page itself needs the token too.
    status, _, doc = raw(server, "GET", "/")
    assert status == 403 and "open the address `transnli review` printed" in doc["error"]
    assert raw(server, "GET", "/api/state")[0] == 403


def test_a_foreign_host_name_is_refused(server, run_dir):
    """DNS rebinding: evil.example resolved to 127.0.0.1 sends Host: evil.example."""
    port = server.server_address[1]
    body = judge_body(server, server.session.order[0])
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1:1", None):
        headers = authorised(server, body)
        if host is not None:
            headers["Host"] = host
        status, _, doc = raw(server, "POST", "/api/judge", headers, body, skip_host=True)
        assert status == 403 and "is not this review server" in doc["error"], host
    status, _, _ = raw(
        server, "GET", f"/?token={server.token}", {"Host": "evil.example"}, skip_host=True
    )
    assert status == 403
    assert log_text(run_dir) == ""
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
        status, _, _ = raw(
            server, "GET", "/api/state", {**authorised(server), "Host": host}, skip_host=True
        )
        assert status == 200, host


def test_another_origin_is_refused_even_with_the_token(server, run_dir):
    port = server.server_address[1]
    body = judge_body(server, server.session.order[0])
    for origin in (
        "http://evil.example",
        "null",
        f"http://127.0.0.1:{port + 1}",
        f"https://127.0.0.1:{port}",
    ):
        status, _, doc = raw(
            server, "POST", "/api/judge", authorised(server, body, Origin=origin), body
        )
        assert status == 403 and "are not allowed" in doc["error"], origin
    assert log_text(run_dir) == ""
    status, _, _ = raw(
        server,
        "POST",
        "/api/judge",
        authorised(server, body, Origin=f"http://localhost:{port}"),
        body,
    )
    assert status == 200 and log_text(run_dir).count("\n") == 1


@pytest.mark.parametrize(
    ("length", "status", "words"),
    [
        ("-1", 400, "bad Content-Length"),
        ("abc", 400, "bad Content-Length"),
        ("1e3", 400, "bad Content-Length"),
        (str(10**12), 413, "over 65536 bytes"),
        (None, 411, "Content-Length header is required"),
    ],
)
def test_a_bad_content_length_is_answered_in_json(server, run_dir, length, status, words):
    headers = {"X-Review-Token": server.token, "Content-Type": "application/json"}
    if length is not None:
        headers["Content-Length"] = length
    got, res_headers, doc = raw(server, "POST", "/api/judge", headers)
    assert got == status and words in doc["error"]
    assert res_headers["Content-Type"] == "application/json"
    assert log_text(run_dir) == ""
    assert api(server)("GET", "/api/state")[0] == 200  # the server goes on serving


def test_a_body_longer_than_the_cap_is_not_read(server):
    """The cap is on the declared length: a client that declares a huge body and starts sending
    it is answered at once and its connection closed, the body never read. (Only the first bytes
    are sent: more, unread when the server closes, would make the kernel reset the connection.)"""
    sock = socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=30)
    head = (
        f"POST /api/judge HTTP/1.1\r\nHost: 127.0.0.1:{server.server_address[1]}\r\n"
        f"X-Review-Token: {server.token}\r\nContent-Length: 400000000\r\n\r\n"
    )
    sock.sendall(head.encode() + b"x" * 1000)
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    sock.close()
    assert answer.startswith(b"HTTP/1.0 413") or answer.startswith(b"HTTP/1.1 413")
    assert b'"error"' in answer
    assert api(server)("GET", "/api/state")[0] == 200


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"annotator": ["a"]}, "annotator must be a string (got list)"),
        ({"annotator": {}}, "annotator must be a string (got dict)"),
        ({"annotator": 7}, "annotator must be a string (got int)"),
        ({"annotator": "# boss <b>"}, "is not a name of up to 64"),
        ({"annotator": "x" * 65}, "is not a name of up to 64"),
        ({"index": True}, "index must be an integer (got true)"),
        ({"index": "3"}, "index must be an integer"),
        ({"index": 2.0}, "index must be an integer"),
        ({"verdict": ["good"]}, "verdict must be a string"),
        ({"reason": 5}, "reason must be a string or null"),
        ({"reason": "x" * 2001}, "reason is longer than 2000"),
        ({"error_type": {"a": 1}}, "error_type must be a string or null"),
        ({"extra": 1}, "unknown field(s) extra"),
        ({"digest": None}, "digest must be the string the state gave with the triple (got Non"),
        ({"digest": 5}, "digest must be the string the state gave with the triple (got int)"),
    ],
)
def test_badly_typed_fields_are_refused(server, run_dir, body, words):
    first = server.session.order[0]
    digest = triple_digest(server.session.index.record(first))
    full = {"index": first, "verdict": "good", "digest": digest, **body}
    status, doc = api(server)("POST", "/api/judge", full)
    assert status == 400 and words in doc["error"], doc
    assert log_text(run_dir) == ""
    status, doc = api(server)("POST", "/api/undo", {"annotator": ["a"]})
    assert status == 400 and "annotator must be a string" in doc["error"]
    status, doc = api(server)("GET", "/api/state?annotator=%3Cscript%3E")
    assert status == 400 and "is not a name" in doc["error"]


def test_only_the_sessions_sample_is_judged(server, run_dir):
    """A seed-0 sample of 10 of 30: indices outside it are refused, so no one can add
    hand-picked triples to the random sample the card's precision comes from."""
    outside = sorted(set(range(30)) - set(server.session.order))
    for index in outside[:3]:
        status, doc = api(server)("POST", "/api/judge", json.loads(judge_body(server, index)))
        assert status == 400 and "is not in this session's order" in doc["error"]
        assert "(the random sample of 10, seed 0, of " in doc["error"]
    assert log_text(run_dir) == ""


def test_every_answer_forbids_framing_and_foreign_scripts(server):
    status, headers, _ = raw(server, "GET", "/api/state", authorised(server))
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=30)
    conn.request("GET", f"/?token={server.token}")
    page = conn.getresponse()
    page.read()
    for h in (headers, page.headers):
        assert h["X-Frame-Options"] == "DENY" and h["X-Content-Type-Options"] == "nosniff"
        csp = h["Content-Security-Policy"]
        assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp and "script-src 'sha256-" in csp
    assert page.status == 200 and page.headers["Content-Type"].startswith("text/html")


def test_an_unexpected_failure_is_a_json_500_not_a_dead_connection(server, monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(server.session, "state", broken)
    status, doc = api(server)("GET", "/api/state")
    assert status == 500 and doc == {"error": "RuntimeError: disk on fire"}
    err = capsys.readouterr().err
    assert "disk on fire" in err and "Traceback" not in err


def test_garbage_and_unknown_methods_get_json(server):
    sock = socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=30)
    sock.sendall(b"GET / HTTP/1.1\r\n" + b"X-A: b\r\n" * 120 + b"\r\n")
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    sock.close()
    assert b" 431 " in answer.split(b"\r\n")[0] and b'{"error": "Too many headers' in answer
    status, headers, doc = raw(server, "PUT", "/api/judge", authorised(server))
    assert status == 501 and "error" in doc


def test_a_log_line_with_a_wrong_value_is_named_not_a_key_error(server, run_dir):
    """`"good": "yes"` in review.jsonl: the state answers 400 naming the line and field."""
    (run_dir / LOG).write_text(
        json.dumps({"item": "snli-0", "index": 0, "good": "yes", "annotator": "ann"}) + "\n"
    )
    status, doc = api(server)("GET", "/api/state")
    assert status == 400
    assert "review.jsonl:1: field 'good' must be true, false or null (got str" in doc["error"]


def test_the_command_refuses_an_annotator_that_is_not_a_name(run_dir):
    from test_review import cli

    res = cli("review", run_dir, "--annotator", "<b>boss</b>", "--port", "0")
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "--annotator: annotator '<b>boss</b>' is not a name of up to 64" in res.output
