"""A lying server for the SDK's hostile-server tests: a real process on loopback (stdlib only).

``python liar.py SCRIPT PORT_FILE`` serves whatever ``SCRIPT`` (JSON, re-read on every
request, so a test can change it between calls) says for ``"METHOD /path"``::

    {"GET /v1/protocol": {"json": {...}},
     "GET /v1/round": {"status": 200, "text": "not json", "headers": {"X-A": "1"}},
     "GET /v1/artefacts/item-matrix": {"b64": "...", "headers": {...}},
     "GET /v1/artefacts/neighbours": {"declared": 1500000000, "send": 268435456}}

``declared``/``send`` answer with ``Content-Length: declared`` (none if null: the body ends
when the liar hangs up) and then zeros, up to ``send`` bytes or until the client hangs up.
``{"json": {...}, "drip": SECONDS}`` sends a whole, valid reply one byte every ``SECONDS``,
status line and headers included (a service that trips no per-read timeout).
A browser's CORS preflight (OPTIONS) is allowed for any origin (the demo page's tests; a
reply's own ``Access-Control-Allow-Origin`` comes from its ``headers``).
Every request is appended to ``SCRIPT.log`` (one JSON line: method, path, the body as base64,
and for a streamed reply the bytes written), so a test sees what a device sent and how much
of a body it took. A path without a reply is a 404.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

_CHUNK = b"\0" * (1 << 16)


class Liar(BaseHTTPRequestHandler):
    script: Path

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def _record(self, body: bytes, **extra: object) -> None:
        line = {"method": self.command, "path": self.path,
                "body": base64.b64encode(body).decode(), **extra}
        with open(f"{self.script}.log", "a") as f:
            f.write(json.dumps(line) + "\n")

    def _reply(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        routes = json.loads(self.script.read_text())
        spec = routes.get(f"{self.command} {self.path}")
        if spec is None:
            self._record(body)
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if "declared" in spec:
            self.send_response(spec.get("status", 200))
            for k, v in spec.get("headers", {}).items():
                self.send_header(k, v)
            if spec["declared"] is not None:  # else the body ends when the liar hangs up
                self.send_header("Content-Length", str(spec["declared"]))
            self.end_headers()
            written = 0
            try:
                while written < spec["send"]:
                    self.wfile.write(_CHUNK)
                    written += len(_CHUNK)
                self.wfile.flush()
            except OSError:
                pass
            self._record(body, written=written)
            self.close_connection = True
            return
        if "drip" in spec:
            self._drip(body, json.dumps(spec["json"]).encode(), float(spec["drip"]))
            return
        if "json" in spec:
            data, ctype = json.dumps(spec["json"]).encode(), "application/json"
        elif "b64" in spec:
            data, ctype = base64.b64decode(spec["b64"]), "application/octet-stream"
        else:
            data, ctype = spec.get("text", "").encode(), "text/plain"
        self._record(body)
        self.send_response(spec.get("status", 200))
        headers = {"Content-Type": ctype, "Content-Length": str(len(data)),
                   **spec.get("headers", {})}
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _drip(self, body: bytes, data: bytes, seconds: float) -> None:
        self._record(body)
        reply = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(data)}\r\n\r\n").encode() + data
        try:
            for i in range(len(reply)):
                self.wfile.write(reply[i:i + 1])
                self.wfile.flush()
                time.sleep(seconds)
        except OSError:
            pass
        self.close_connection = True

    do_GET = do_POST = _reply

    def do_OPTIONS(self) -> None:  # noqa: N802 - a browser's CORS preflight: allowed
        self._record(b"")
        self.send_response(204)
        for k, v in {"Access-Control-Allow-Origin": self.headers.get("Origin") or "*",
                     "Access-Control-Allow-Methods": "GET, POST",
                     "Access-Control-Allow-Headers": "Authorization, Content-Type, "
                                                     "If-None-Match, X-Dprec-Client",
                     "Content-Length": "0"}.items():
            self.send_header(k, v)
        self.end_headers()


def main() -> None:
    script, port_file = Path(sys.argv[1]), Path(sys.argv[2])
    Liar.script = script
    server = ThreadingHTTPServer(("127.0.0.1", 0), Liar)
    tmp = port_file.with_suffix(".tmp")
    tmp.write_text(str(server.server_address[1]))
    tmp.rename(port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
