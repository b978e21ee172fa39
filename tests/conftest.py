"""Fixtures shared by every test folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest


class HeadlessChromium:
    """Debian's Chromium driven by Playwright, for the ``browser`` tests: :meth:`require`
    skips the test (fails it where ``DPREC_REQUIRE_BROWSER`` is set, as in CI) when a piece
    is missing, saying how to install it."""

    path = os.environ.get("DPREC_CHROMIUM", "/usr/bin/chromium")

    def require(self, files: dict[Path, str] | None = None) -> Any:
        """Playwright's sync API once Chromium, Playwright and ``files`` (each path with
        what installs it) are all there."""
        missing = []
        if not (Path(self.path).is_file() or shutil.which(self.path)):
            missing.append(f"Chromium ({self.path}; apt-get install -y chromium)")
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            missing.append("Playwright (pip install -e '.[dev]')")
        missing += [f"{path} ({how})" for path, how in (files or {}).items()
                    if not path.is_file()]
        if missing:
            why = "missing: " + ", ".join(missing)
            if os.environ.get("DPREC_REQUIRE_BROWSER"):
                pytest.fail(f"DPREC_REQUIRE_BROWSER is set but {why}")
            pytest.skip(why)
        return sync_playwright

    def launch(self, playwright: Any) -> Any:
        """A headless browser of ``playwright`` (no sandbox: CI runs as root)."""
        return playwright.chromium.launch(executable_path=self.path, headless=True,
                                          args=["--no-sandbox"])


@pytest.fixture
def chromium() -> HeadlessChromium:
    return HeadlessChromium()
