"""``dprec serve demo``'s Ctrl-C: a stop that hangs is cut short, with its stacks printed."""

from __future__ import annotations

import threading
import time

from dprec.cli import demo as cli_demo


class _HangingDemo:
    def __init__(self) -> None:
        self.release = threading.Event()

    def stop(self) -> None:
        self.release.wait(30)


class _QuickDemo:
    stopped = False

    def stop(self) -> None:
        self.stopped = True


def test_a_stop_that_hangs_returns_after_the_bound_and_says_where(monkeypatch, capfd):
    monkeypatch.setattr(cli_demo, "STOP_SECONDS", 0.3)
    demo = _HangingDemo()
    start = time.monotonic()
    cli_demo._bounded_stop(demo)
    took = time.monotonic() - start
    demo.release.set()
    err = capfd.readouterr().err
    assert took < 5.0 and "the stop took over" in err
    assert "test_demo_stop.py" in err and " in stop" in err  # the hung thread's frame


def test_a_stop_that_ends_prints_nothing(capfd):
    demo = _QuickDemo()
    cli_demo._bounded_stop(demo)
    assert demo.stopped and capfd.readouterr().err == ""
