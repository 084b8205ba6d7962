"""Pages as a person sees them: Debian's Chromium driven by Playwright, screenshots kept as artifacts.

Playwright for Python drives the system browser (``executable_path``; browser downloads are
impossible here), headless, with background networking off (the machine has no network beyond
loopback). Screenshots go to ``$KR_TEST_ARTIFACTS`` or ``<repo>/test-artifacts/`` (git-ignored),
so a CI run keeps them.

Failure: a missing ``chromium`` raises FileNotFoundError naming the package to install
(``scripts/setup`` installs it).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def artifacts_dir() -> Path:
    path = Path(os.environ.get("KR_TEST_ARTIFACTS") or REPO / "test-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise FileNotFoundError("chromium is not installed: apt-get install chromium (scripts/setup does)")
    return found


def screenshot(url: str, name: str, wait_for: str | None = None) -> tuple[Path, str]:
    """Open ``url`` in headless Chromium; save ``<artifacts>/<name>.png``; return it and the page text."""
    from playwright.sync_api import sync_playwright

    out = artifacts_dir() / f"{name}.png"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, timeout=60_000)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.goto(url, timeout=60_000)
            if wait_for:
                page.wait_for_selector(wait_for, timeout=30_000)
            page.screenshot(path=str(out), full_page=True)
            text = page.inner_text("body")
        finally:
            browser.close()
    return out, text
