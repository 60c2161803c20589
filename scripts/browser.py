"""Headless Chromium for the browser test and the README's screenshots: Debian's /usr/bin/chromium driven by
Playwright (`apt-get install chromium`; Playwright's own browser download is not needed)."""
from __future__ import annotations

import os

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")  # another install: CHROMIUM=/path/to/chromium
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = 30_000  # a loaded 2-core machine can take more than Playwright's default 5 s


def launch(playwright):
    """A headless Chromium browser from a started `sync_playwright()`."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
