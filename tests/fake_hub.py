"""A local server that speaks the part of the Hugging Face Hub's HTTP API that
`huggingface_hub.HfApi` uses to create a dataset repository and upload a folder to it, so that
`transnli publish` is tested with the real client end to end.

Endpoints:
- POST /api/repos/create (409 when the repo exists, as the Hub answers);
- POST /api/validate-yaml (the card's front matter must be a YAML mapping);
- POST /api/datasets/{repo}/preupload/{rev}: every file "regular", i.e. sent base64 inside the
  commit, as the Hub does for small text files, with the git oid of the file already there so that
  the client skips unchanged files;
- POST /api/datasets/{repo}/commit/{rev}: the NDJSON commit (header, file, deletedFile);
- GET /api/datasets/{repo}/tree/{rev}: the listing that `delete_patterns` reads;
- GET /api/datasets/{repo}[/revision/{rev}]: repo info.

A new repo holds `.gitattributes`, as on the Hub. Every request must carry a bearer token (401
otherwise); the tokens seen are recorded.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

GITATTRIBUTES = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"


def git_oid(content: bytes) -> str:
    """The git blob id of `content` (what the Hub reports as a regular file's oid)."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@dataclass
class Repo:
    private: bool
    files: dict[str, bytes] = field(default_factory=lambda: {".gitattributes": GITATTRIBUTES})
    commits: list[str] = field(default_factory=list)  # oids, oldest first

    def head(self) -> str:
        return self.commits[-1] if self.commits else "0" * 40

    def commit(self, summary: str) -> str:
        digest = hashlib.sha1(self.head().encode() + summary.encode())
        for path in sorted(self.files):
            digest.update(path.encode() + b"\0" + git_oid(self.files[path]).encode())
        self.commits.append(digest.hexdigest())
        return self.commits[-1]


class FakeHub:
    def __init__(self):
        self.repos: dict[str, Repo] = {}
        self.tokens: list[str | None] = []  # the bearer token of every request, in order
        self.cards: list[dict] = []  # the front matter of every card validated
        self.lock = threading.Lock()
        hub = self

        class Handler(_Handler):
            state = hub

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def api(self):
        from huggingface_hub import HfApi

        return HfApi(endpoint=self.url)

    def files(self, repo_id: str) -> dict[str, bytes]:
        return dict(self.repos[repo_id].files)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


_REPO = r"/api/datasets/(?P<repo>[^/]+/[^/]+)"


class _Handler(BaseHTTPRequestHandler):
    state: FakeHub

    def log_message(self, *args):  # keep pytest's output clean
        pass

    # -- plumbing --
    def _send(self, status: int, payload, headers: dict[str, str] | None = None):
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _authorised(self) -> bool:
        auth = self.headers.get("Authorization") or ""
        token = auth[len("Bearer ") :] if auth.startswith("Bearer ") else None
        with self.state.lock:
            self.state.tokens.append(token)
        if not token:
            self._send(401, {"error": "Invalid credentials in Authorization header"})
        return bool(token)

    def _repo(self, repo_id: str) -> Repo | None:
        repo = self.state.repos.get(repo_id)
        if repo is None:
            self._send(404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"})
        return repo

    def _route(self, routes):
        path = unquote(urlsplit(self.path).path)
        for pattern, handler in routes:
            found = re.fullmatch(pattern, path)
            if found:
                if self._authorised():
                    with self.state.lock:
                        handler(**found.groupdict())
                return
        self._send(404, {"error": f"no route {path}"})

    def do_POST(self):  # noqa: N802 - http.server's name
        self._route(
            [
                (r"/api/repos/create", self._create),
                (r"/api/validate-yaml", self._validate_yaml),
                (_REPO + r"/preupload/(?P<rev>[^/]+)", self._preupload),
                (_REPO + r"/commit/(?P<rev>[^/]+)", self._commit),
            ]
        )

    def do_GET(self):  # noqa: N802
        self._route(
            [
                (_REPO + r"/tree/(?P<rev>[^/]+)(?:/(?P<sub>.*))?", self._tree),
                (_REPO + r"(?:/revision/(?P<rev>[^/]+))?", self._info),
            ]
        )

    # -- endpoints --
    def _create(self):
        body = json.loads(self._body())
        repo_id = f"{body['organization']}/{body['name']}"
        url = f"{self.state.url}/datasets/{repo_id}"
        if body.get("type") != "dataset":
            return self._send(400, {"error": "this fake hub holds dataset repos only"})
        if repo_id in self.state.repos:
            return self._send(409, {"error": "You already created this dataset repo", "url": url})
        repo = Repo(private=body.get("visibility") == "private" or bool(body.get("private")))
        repo.commit("initial commit")
        self.state.repos[repo_id] = repo
        self._send(200, {"url": url, "name": repo_id})

    def _validate_yaml(self):
        """The card's front matter must be a YAML mapping (the Hub checks more: its schema)."""
        import yaml

        content = json.loads(self._body())["content"]
        found = re.match(r"---\n(.*?)\n---\n", content, re.S)
        try:
            meta = yaml.safe_load(found.group(1)) if found else {}
        except yaml.YAMLError as e:
            meta = str(e)
        if not isinstance(meta, dict):
            return self._send(400, {"errors": [{"message": f"invalid YAML: {meta}"}]})
        self.state.cards.append(meta)
        self._send(200, {"warnings": []})

    def _preupload(self, repo, rev):
        body = json.loads(self._body())
        found = self._repo(repo)
        if found is None:
            return
        files = [
            {
                "path": f["path"],
                "uploadMode": "regular",
                "shouldIgnore": False,
                "oid": git_oid(found.files[f["path"]]) if f["path"] in found.files else None,
            }
            for f in body["files"]
        ]
        self._send(200, {"files": files, "commitOid": found.head()})

    def _commit(self, repo, rev):
        lines = [json.loads(line) for line in self._body().splitlines() if line.strip()]
        found = self._repo(repo)
        if found is None:
            return
        summary = ""
        for item in lines:
            key, value = item["key"], item["value"]
            if key == "header":
                summary = value.get("summary", "")
            elif key == "file":
                found.files[value["path"]] = base64.b64decode(value["content"])
            elif key == "deletedFile":
                found.files.pop(value["path"], None)
            else:
                return self._send(400, {"error": f"this fake hub does not take {key}"})
        oid = found.commit(summary)
        self._send(
            200,
            {"commitUrl": f"{self.state.url}/datasets/{repo}/commit/{oid}", "commitOid": oid},
        )

    def _tree(self, repo, rev, sub=None):
        found = self._repo(repo)
        if found is None:
            return
        prefix = (sub.strip("/") + "/") if sub else ""
        entries, folders = [], set()
        for path in sorted(found.files):
            if not path.startswith(prefix):
                continue
            parts = path.split("/")
            folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
            content = found.files[path]
            entries.append(
                {"type": "file", "oid": git_oid(content), "size": len(content), "path": path}
            )
        entries += [{"type": "directory", "oid": "0" * 40, "path": f} for f in sorted(folders)]
        self._send(200, entries)

    def _info(self, repo, rev=None):
        found = self._repo(repo)
        if found is None:
            return
        self._send(
            200,
            {
                "id": repo,
                "sha": found.head(),
                "private": found.private,
                "siblings": [{"rfilename": p} for p in sorted(found.files)],
            },
        )
