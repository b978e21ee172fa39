"""The demo page's own server (``dprec serve demo``): a few static files, the catalogue and the
enrolment, on 127.0.0.1, each answer under a content-security policy.

The policy (:func:`content_security_policy`): scripts from the page's own origin only, and
``'wasm-unsafe-eval'`` because libsodium's JS build and the SDK's Prio3 loops
(clients/js/src/prio3/wasm64.ts) compile WebAssembly (without it Chromium refuses
``WebAssembly.instantiate``, and libsodium falls back to asm.js with console warnings);
styles and images from the own origin; ``connect-src`` the page's, the server's and the
proxy's origins (all on 127.0.0.1), nothing else; no frames, no forms, no base URL. Fonts
are the system's: nothing is fetched from elsewhere.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from dprec.errors import DprecError

__all__ = ["PAGE_DIR", "PageServer", "bundle_path", "content_security_policy"]

PAGE_DIR = Path(__file__).resolve().parents[3] / "clients" / "js" / "demo"
"""The page's sources in a checkout (index.html, demo.css, logo.svg, the TS entry)."""

_STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
           "/index.html": ("index.html", "text/html; charset=utf-8"),
           "/demo.css": ("demo.css", "text/css; charset=utf-8"),
           "/logo.svg": ("logo.svg", "image/svg+xml")}


def bundle_path(page_dir: Path) -> Path:
    """The page's one script, bundled by esbuild (``make demo-js``)."""
    return page_dir.parent / "dist" / "demo" / "demo.js"


def content_security_policy(server: str, proxy: str) -> str:
    """The page's policy (module docstring); ``server``/``proxy``: their origins."""
    return ("default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; "
            f"img-src 'self'; connect-src 'self' {server} {proxy}; base-uri 'none'; "
            "form-action 'none'; frame-ancestors 'none'")


class PageServer:
    """Binds 127.0.0.1 at once (so that the page's origin is known before the services
    start), serves once :meth:`serve` is given the page's config and the enrolment."""

    def __init__(self, page_dir: Path | None = None, port: int = 0) -> None:
        self.page_dir = Path(page_dir or PAGE_DIR)
        missing = [f for f, _ in _STATIC.values() if not (self.page_dir / f).is_file()]
        if not bundle_path(self.page_dir).is_file():
            missing.append(f"{bundle_path(self.page_dir)} (build it: make demo-js)")
        if missing:
            raise DprecError(f"the demo page is incomplete in {self.page_dir}: missing "
                             f"{', '.join(missing)}")
        try:
            self.httpd = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        except OSError as e:
            raise DprecError(f"cannot listen on 127.0.0.1:{port}: {e.strerror or e}") from None
        self.httpd.daemon_threads = True
        self.httpd.page = self  # type: ignore[attr-defined]
        self.config: dict[str, Any] = {}
        self.enrol: Callable[[], dict[str, Any] | None] = lambda: None
        self.reported: Callable[[int], None] = lambda client_id: None
        self.policy = ""
        self._thread: threading.Thread | None = None

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def url(self) -> str:
        return self.origin + "/"

    def serve(self, config: dict[str, Any], enrol: Callable[[], dict[str, Any] | None],
              reported: Callable[[int], None]) -> None:
        """Answer requests from now on (a background thread): ``enrol`` hands out a seat,
        ``reported`` hears a page's word that its seat's report was accepted."""
        self.config, self.enrol, self.reported = config, enrol, reported
        self.policy = content_security_policy(config["server"], config["proxy"])
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True,
                                        name="dprec-demo-page")
        self._thread.start()

    def file(self, path: str) -> tuple[bytes, str] | None:
        """A static file's bytes and type (None: not one of the page's)."""
        if path == "/demo.js":
            return bundle_path(self.page_dir).read_bytes(), "text/javascript; charset=utf-8"
        if path not in _STATIC:
            return None
        name, ctype = _STATIC[path]
        return (self.page_dir / name).read_bytes(), ctype

    def stop(self) -> None:
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join(5)
        self.httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    server_version = "dprec-demo"
    sys_version = ""

    def log_message(self, *args: object) -> None:  # quiet: the page's requests are its own
        pass

    @property
    def page(self) -> PageServer:
        return self.server.page  # type: ignore[attr-defined,no-any-return]

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        for k, v in {"Content-Type": ctype, "Content-Length": str(len(body)),
                     "Content-Security-Policy": self.page.policy,
                     "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
                     "Cache-Control": "no-store", "Cross-Origin-Opener-Policy": "same-origin"
                     }.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, doc: object) -> None:
        self._send(status, json.dumps(doc).encode(), "application/json")

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        path = self.path.split("?", 1)[0]
        if path == "/config.json":
            self._json(200, self.page.config)
            return
        found = self.page.file(path)
        if found is None:
            self._json(404, {"detail": f"no such page: {path}"})
            return
        self._send(200, *found)

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        if self.path not in ("/enrol", "/reported"):
            self._json(404, {"detail": f"no such route: {self.path}"})
            return
        if self.headers.get("Origin") not in (None, self.page.origin):
            self._json(403, {"detail": "this route is for the demo page's own origin"})
            return
        if self.path == "/reported":
            self._reported()
            return
        seat = self.page.enrol()
        if seat is None:
            self._json(409, {"detail": "every seat of this demo is taken: restart it with "
                                       "more --seats"})
            return
        self._json(200, seat)

    def _reported(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            doc = json.loads(self.rfile.read(min(length, 256)) or b"null")
            client_id = int(doc["client_id"])
        except (ValueError, TypeError, KeyError):
            self._json(400, {"detail": 'send {"client_id": N}'})
            return
        self.page.reported(client_id)
        self._json(200, {"heard": True})
