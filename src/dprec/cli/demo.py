"""``dprec serve demo``: the browser demo (:mod:`dprec.services.demo`) until Ctrl-C."""

from __future__ import annotations

import faulthandler
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dprec.cli.common import fail
from dprec.errors import DprecError

if TYPE_CHECKING:
    from dprec.services.demo import Demo

__all__ = ["STOP_SECONDS", "serve_demo"]

STOP_SECONDS = 40.0
"""Ctrl-C returns within this: the services are children that end with this process
(their stdin pipe closes), so a stop that hangs is cut short, its threads' stacks printed."""


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
        demo = Demo(DemoSettings(data_dir=data_dir, crowd=crowd, seats=seats, epsilon=epsilon,
                                 k=k, close_at=close_at, port=port))
    except DprecError as e:
        fail(e)
    try:
        demo.start()
    except DprecError as e:
        demo.stop()
        fail(e)
    stop = threading.Event()
    # Ctrl-C and SIGTERM both stop the demo, even where the parent started it with SIGINT
    # ignored (a disposition children inherit: Python then raises no KeyboardInterrupt)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    assert demo.server is not None and demo.proxy is not None
    typer.echo(f"dprec demo: open {demo.page.url} (server {demo.server.url}, proxy "
               f"{demo.proxy.url}); Ctrl-C stops all")
    said: set[str] = set()
    try:
        while not stop.wait(0.5):
            _progress(demo, said)
    except KeyboardInterrupt:
        pass
    finally:
        _bounded_stop(demo)
        typer.echo("dprec demo: stopped")


def _bounded_stop(demo: Demo) -> None:
    """``demo.stop()``, given :data:`STOP_SECONDS`; past that, every thread's stack goes to
    stderr (what hung) and the command returns anyway."""
    stopper = threading.Thread(target=demo.stop, daemon=True, name="dprec-demo-stop")
    stopper.start()
    stopper.join(STOP_SECONDS)
    if stopper.is_alive():
        typer.echo(f"dprec demo: the stop took over {STOP_SECONDS:.0f} s; leaving the "
                   "services to end with this process. Where it hung:", err=True)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)



def _progress(demo: Demo, said: set[str]) -> None:
    """One line when the crowd has reported and one when the round is closed."""
    if "crowd" not in said and demo.crowd_reported + len(demo.crowd_errors) >= demo.settings.crowd:
        said.add("crowd")
        typer.echo(f"dprec demo: the crowd's {demo.crowd_reported} devices reported "
                   f"({len(demo.crowd_errors)} failed); the round closes once a browser has "
                   "reported too")
    if "closed" not in said and demo.closed is not None:
        said.add("closed")
        typer.echo(f"dprec demo: round 0 closed: {demo.closed.get('outcomes')}")
