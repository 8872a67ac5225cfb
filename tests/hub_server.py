"""A stand-in for the Hugging Face Hub on 127.0.0.1 (tests only): it serves repositories the test makes
from folders, on the two routes ``huggingface_hub.snapshot_download`` uses —
``GET /api/models/{repo}/revision/{rev}`` (the commit and the file list) and ``HEAD``/``GET``
``/{repo}/resolve/{rev}/{file}`` (each file, with its ETag, size and commit; ``Range`` honoured) — and
records every request. ``cut_after``: the first GET of a file sends only that many bytes, then drops the
connection (an interrupted download); ``short``: every GET of that file is a complete answer of only that many
bytes (a truncated file, where the HEAD announced the whole size). ``hang``: every request is
accepted and never answered (until the server stops); ``status``: every request is answered with that HTTP status."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse


class HubStandIn:
    def __init__(self) -> None:
        self.repos: dict[str, Path] = {}  # repo id -> folder
        self.commits: dict[str, str] = {}
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, Range header)
        self.cut_after: dict[str, int] = {}  # file name -> bytes sent by its first GET before the connection drops
        self.gated: set[str] = set()
        self.short: dict[str, int] = {}  # file name -> the bytes every GET of it answers with
        self.hang = False
        self.status: int | None = None
        self._stopping = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:  # noqa: N802
                server._handle(self, head=True)

            def do_GET(self) -> None:  # noqa: N802
                server._handle(self, head=False)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> HubStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stopping.set()  # a hanging request's thread ends
        self.httpd.shutdown()
        self.httpd.server_close()

    def add_repo(self, repo_id: str, folder: Path) -> str:
        self.repos[repo_id] = folder
        digest = hashlib.sha1()
        for f in sorted(folder.iterdir()):
            digest.update(f.name.encode() + f.read_bytes())
        self.commits[repo_id] = digest.hexdigest()
        return self.commits[repo_id]

    # ------------------------------------------------------------------ requests
    def _send(self, h: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str], head: bool) -> None:
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if not head:
            h.wfile.write(body)

    def _handle(self, h: BaseHTTPRequestHandler, head: bool) -> None:
        path = unquote(urlparse(h.path).path)
        self.requests.append((h.command, path, h.headers.get("Range")))
        if self.hang:
            self._stopping.wait(60)
            h.close_connection = True
            return
        if self.status is not None:
            return self._send(h, self.status, b'{"error": "stand-in failure"}', {"Content-Type": "application/json"}, head)
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "models"] and "tree" in parts:
            i = parts.index("tree")
            return self._tree(h, "/".join(parts[2:i]), head)
        if parts[:2] == ["api", "models"] and "revision" in parts:
            i = parts.index("revision")
            repo_id = "/".join(parts[2:i])
            return self._info(h, repo_id, head)
        if len(parts) >= 5 and parts[2] == "resolve":
            repo_id, file = "/".join(parts[:2]), "/".join(parts[4:])
            return self._file(h, repo_id, file, head)
        self._send(h, 404, b'{"error": "not found"}', {"Content-Type": "application/json"}, head)

    def _info(self, h: BaseHTTPRequestHandler, repo_id: str, head: bool) -> None:
        if repo_id not in self.repos:
            headers = {"Content-Type": "application/json", "X-Error-Code": "RepoNotFound"}
            return self._send(h, 404, b'{"error": "Repository not found"}', headers, head)
        folder = self.repos[repo_id]
        siblings = [{"rfilename": f.name, "size": f.stat().st_size} for f in sorted(folder.iterdir()) if f.is_file()]
        body = json.dumps(
            {"id": repo_id, "modelId": repo_id, "sha": self.commits[repo_id], "siblings": siblings, "private": False}
        ).encode()
        self._send(h, 200, body, {"Content-Type": "application/json"}, head)

    def _tree(self, h: BaseHTTPRequestHandler, repo_id: str, head: bool) -> None:
        folder = self.repos.get(repo_id)
        if folder is None:
            return self._send(h, 404, b'{"error": "Repository not found"}', {"X-Error-Code": "RepoNotFound"}, head)
        entries = []
        for f in sorted(folder.iterdir()):
            data = f.read_bytes()
            blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git's blob id
            entries.append({"type": "file", "path": f.name, "size": len(data), "oid": blob})
        self._send(h, 200, json.dumps(entries).encode(), {"Content-Type": "application/json"}, head)

    def _file(self, h: BaseHTTPRequestHandler, repo_id: str, file: str, head: bool) -> None:
        folder = self.repos.get(repo_id)
        if repo_id in self.gated:
            headers = {"X-Error-Code": "GatedRepo", "X-Error-Message": "Access to model is restricted."}
            return self._send(h, 401, b"gated", headers, head)
        if folder is None or not (folder / file).is_file():
            return self._send(h, 404, b"Entry not found", {"X-Error-Code": "EntryNotFound"}, head)
        data = (folder / file).read_bytes()
        headers = {
            "ETag": f'"{hashlib.sha256(data).hexdigest()}"',
            "X-Repo-Commit": self.commits[repo_id],
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        status, body = 200, data
        wanted = h.headers.get("Range")
        if wanted and wanted.startswith("bytes=") and not head:
            start = int(wanted[6:].split("-")[0] or 0)
            status, body = 206, data[start:]
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        if file in self.short and not head:
            body = body[: self.short[file]]
        cut = self.cut_after.pop(file, None) if not head else None
        if cut is not None:  # promise the whole body, send part of it, drop the connection
            h.send_response(status)
            for k, v in headers.items():
                h.send_header(k, v)
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body[:cut])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(2)
            return
        self._send(h, status, body, headers, head)
