"""``dprec serve demo``: the browser demo (:mod:`dprec.services.demo`) until Ctrl-C."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated

import typer

from dprec.cli.common import fail
from dprec.errors import DprecError

__all__ = ["serve_demo"]


def serve_demo(
    data_dir: Annotated[Path | None, typer.Option(
        "--data-dir", envvar="DPREC_DATA",
        help="ML-100K folder (u.data, u.user, u.item); default: the cache.")] = None,
    crowd: Annotated[int, typer.Option(
        help="Python devices reporting the first users' films, so that a round can reach "
             "min_honest (= crowd) reports.")] = 200,
    seats: Annotated[int, typer.Option(help="Browser clients that may join.")] = 20,
    epsilon: Annotated[float, typer.Option(help="dp-pop's epsilon per device.")] = 1.0,
    k: Annotated[int, typer.Option(help="Most films one device contributes.")] = 10,
    close_at: Annotated[int | None, typer.Option(
        "--close-at", help="Reports held when the round is closed (default: crowd + 1).")
    ] = None,
    port: Annotated[int, typer.Option(help="The page's port (0: any free port).")] = 8480,
) -> None:
    """Start the dp-pop server, the proxy and the demo page on 127.0.0.1; print the page's
    URL; stop them all on Ctrl-C."""
    from dprec.services.demo import Demo, DemoSettings

    try:
        settings = DemoSettings(data_dir=data_dir, crowd=crowd, seats=seats, epsilon=epsilon,
                                k=k, close_at=close_at, port=port)
        demo = Demo(settings).start()
    except DprecError as e:
        fail(e)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    typer.echo(f"dprec demo: open {demo.page.url} (server {demo.server.url}, "  # type: ignore[union-attr]
               f"proxy {demo.proxy.url}); Ctrl-C stops all", err=False)  # type: ignore[union-attr]
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        demo.stop()
        typer.echo("dprec demo: stopped")
