"""A request parser for the simulated arena's stdlib HTTP handler, without ``email``.

``BaseHTTPRequestHandler.parse_request`` reads the headers through the ``email`` package's
feed parser: about half of the simulated endpoint's CPU per call (a profile over 1,500
labelling calls; the openai client sends ~17 headers). The endpoint needs the request
line, ``Content-Length`` and the keep-alive decision; this mixin reads exactly those, with
the stdlib's answers to malformed requests (400, 431, 505).
"""

from __future__ import annotations

from http import HTTPStatus

MAX_LINE = 65536
MAX_HEADERS = 100


class Headers(dict):
    """Header name (lower case) -> value; ``get`` ignores the name's case."""

    def get(self, name: str, default=None):
        return super().get(name.lower(), default)

    def __getitem__(self, name: str):
        return super().get(name.lower())


class FastRequestParsing:
    """Mixin for a ``BaseHTTPRequestHandler``: HTTP/1.0 and 1.1 requests only."""

    def parse_request(self) -> bool:
        self.command = None
        self.request_version = "HTTP/0.9"
        self.close_connection = True
        line = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        self.requestline = line
        words = line.split()
        if len(words) != 3:
            self.send_error(HTTPStatus.BAD_REQUEST, f"Bad request syntax ({line!r})")
            return False
        self.command, self.path, version = words
        if version not in ("HTTP/1.0", "HTTP/1.1"):
            self.send_error(
                HTTPStatus.HTTP_VERSION_NOT_SUPPORTED, f"Invalid HTTP version ({version})"
            )
            return False
        self.request_version = version
        headers = Headers()
        while True:
            raw = self.rfile.readline(MAX_LINE + 1)
            if len(raw) > MAX_LINE:
                self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Line too long")
                return False
            if raw in (b"\r\n", b"\n", b""):
                break
            if len(headers) >= MAX_HEADERS:
                self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Too many headers")
                return False
            name, sep, value = str(raw, "iso-8859-1").partition(":")
            if not sep:
                self.send_error(HTTPStatus.BAD_REQUEST, f"Bad header line ({raw!r})")
                return False
            headers[name.strip().lower()] = value.strip()
        self.headers = headers
        connection = headers.get("connection", "").lower()
        self.close_connection = connection == "close" or (
            version == "HTTP/1.0" and connection != "keep-alive"
        )
        if headers.get("expect", "").lower() == "100-continue":
            self.send_response_only(HTTPStatus.CONTINUE)
            self.end_headers()
        return True
