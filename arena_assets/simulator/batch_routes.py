"""The HTTP routes of the simulated arena's Batch API (``batches.py`` holds the files and
jobs): a mixin of the endpoint's request handler (``endpoint._Handler``), using its
plumbing (``self.endpoint``, ``_send``, ``_error``, ``_call``).

``POST /v1/files`` (multipart: ``purpose``, ``file``), ``GET /v1/files/{id}`` and
``GET /v1/files/{id}/content``; ``POST /v1/batches``, ``GET /v1/batches`` (``limit``,
``after``), ``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import orjson

from arena_assets.simulator.batches import multipart

PATHS = ("/v1/files", "/v1/batches")


class BatchRoutes:
    """Batch API routes (see the module docstring)."""

    def _batch_get(self, path: str) -> None:
        store = self.endpoint.batches
        parts = path.strip("/").split("/")  # v1, files|batches, [id, [content]]
        if parts[1] == "files" and len(parts) in (3, 4):
            f = store.file(parts[2])
            if f is None:
                self._error(404, f"no file {parts[2]}", "file_not_found")
            elif len(parts) == 4 and parts[3] == "content":
                self._send(200, f.data)
            else:
                self._send(200, f.view())
        elif parts[1] == "batches" and len(parts) == 2:
            query = parse_qs(urlsplit(self.path).query)
            limit = int((query.get("limit") or ["20"])[0])
            self._send(
                200, store.listing(max(1, min(limit, 100)), (query.get("after") or [None])[0])
            )
        elif parts[1] == "batches" and len(parts) == 3:
            view = store.retrieve(parts[2])
            if view is None:
                self._error(404, f"no batch {parts[2]}", "batch_not_found")
            else:
                self._send(200, view)
        else:
            self._error(404, f"no route {path}", "not_found")

    def _batch_post(self, path: str) -> None:
        store = self.endpoint.batches
        parts = path.strip("/").split("/")
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if parts[1] == "files" and len(parts) == 2:
            self._call = ("files", "")
            fields = multipart(self.headers.get("Content-Type") or "", raw)
            if "file" not in fields:
                self._error(400, "a multipart body with a file field is required", "invalid_file")
                return
            purpose = fields.get("purpose", ("", b"batch"))[1].decode() or "batch"
            name, data = fields["file"]
            self._send(200, store.add_file(name or "upload.jsonl", purpose, data).view())
        elif parts[1] == "batches" and len(parts) == 2:
            try:
                body = orjson.loads(raw or b"{}")
            except orjson.JSONDecodeError:
                body = None
            if not isinstance(body, dict):
                self._error(400, "body is not a JSON object", "invalid_json")
                return
            status, view, model = store.create(body)
            self._call = ("batches", model)
            self._send(status, view)
        elif parts[1] == "batches" and len(parts) == 4 and parts[3] == "cancel":
            self._call = ("batches/cancel", "")
            view = store.cancel(parts[2])
            if view is None:
                self._error(404, f"no batch {parts[2]}", "batch_not_found")
            else:
                self._send(200, view)
        else:
            self._error(404, f"no route {path}", "not_found")
