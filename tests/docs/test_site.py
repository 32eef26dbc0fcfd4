"""The documentation site, built strict and opened in a real browser (Debian's headless
chromium, driven by playwright; no browser is downloaded).

The site is served on 127.0.0.1 from a thread. Every request the browser makes is
intercepted: one for another host is recorded and aborted, and the test fails. A
screenshot of the home page is kept in docs/_build-check/ (git-ignored; a CI artifact).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Page

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
WAIT_MS = 120_000
SCREENSHOTS = ROOT / "docs" / "_build-check"
# The flags this machine needs; playwright adds a fresh --user-data-dir of its own.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # No name but the site's own resolves, so nothing can leave even if a route missed it.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
# What a page loads: <script src>, <link href> (stylesheets, icons), <img src>, CSS url().
_LOADED = re.compile(
    r"<(?:script|img|iframe|source)\b[^>]*\bsrc=[\"']([^\"']+)"
    r"|<link\b[^>]*\bhref=[\"']([^\"']+)"
    r"|url\(\s*[\"']?([^\"')]+)",
    re.I,
)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built with ``mkdocs build --strict`` (a warning fails the build)."""
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def base_url(site: Path) -> Iterator[str]:
    """The built site, served on 127.0.0.1 from a thread."""
    handler = functools.partial(_Quiet, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_built_pages_load_nothing_from_elsewhere(site: Path) -> None:
    external = []
    files = [*site.rglob("*.html"), *site.rglob("*.css")]
    for file in files:
        for groups in _LOADED.findall(file.read_text(encoding="utf-8", errors="replace")):
            url = next(g for g in groups if g)
            if re.match(r"^\s*(https?:)?//", url):
                external.append(f"{file.relative_to(site)}: {url}")
    assert len(files) > 30
    assert external == []


def test_the_pages_listed_exist(site: Path) -> None:
    pages = [
        "index.html", "getting-started.html", "backends.html", "using.html",
        "capabilities.html", "nams-sessions.html", "blocking.html", "frameworks/index.html",
        "frameworks/langchain.html", "frameworks/openai-agents.html",
        "frameworks/pydantic-ai.html", "frameworks/llamaindex.html", "frameworks/strands.html",
        "mcp.html", "server.html", "limits.html", "transfer.html", "differences.html",
        "writing-a-backend.html", "conformance.html", "scenarios.html", "turns.html",
        "reliability.html", "benchmarks.html", "reference/api.html",
        "reference/interface.html", "reference/errors.html", "reference/models.html",
        "changelog.html", "contributing.html",
    ]  # fmt: skip
    assert [page for page in pages if not (site / page).is_file()] == []
    import memory_core

    assert f"memory-core {memory_core.__version__}" in (site / "index.html").read_text()


def test_the_site_in_a_browser(base_url: str) -> None:
    assert CHROMIUM.exists(), "needs Debian's chromium: apt-get install chromium (.ci/run does)"
    from playwright.sync_api import Route, sync_playwright

    host = urlsplit(base_url).netloc
    left: list[str] = []
    errors: list[str] = []

    def only_this_site(route: Route) -> None:
        if urlsplit(route.request.url).netloc == host:
            route.continue_()
        else:
            left.append(route.request.url)
            route.abort()

    def watch(page: Page) -> None:
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))

    with sync_playwright() as playwright:
        # Generous waits: on a loaded 2-core CI machine chromium may take long to start or
        # draw; they bound a hang, they measure nothing.
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=FLAGS, timeout=WAIT_MS
        )
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(WAIT_MS)
        context.set_default_navigation_timeout(WAIT_MS)
        context.route("**/*", only_this_site)
        context.on("request", lambda r: None if host in r.url else left.append(r.url))
        page = context.new_page()
        watch(page)

        page.goto(f"{base_url}/index.html", wait_until="networkidle")
        assert "One async API for AI-agent conversation memory" in page.inner_text("article")
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "home.png"), full_page=False)

        page.goto(f"{base_url}/reference/api.html", wait_until="networkidle")
        assert "MemoryBackend" in page.inner_text("article")
        assert page.locator("[id='memory_core.MemoryBackend.add_message']").count() == 1

        _search(page, "NotSupportedError")
        assert "NotSupportedError" in page.inner_text(".md-search-result")
        browser.close()

    assert left == [], f"requests left 127.0.0.1: {left}"
    assert errors == [], f"console errors: {errors}"


def _search(page: Page, query: str) -> None:
    """Type ``query`` into the site's search until a result shows. The search index is
    built in a web worker after the page loads; a query typed before the worker is ready
    can be dropped (CI once waited 120 s for a result that never came), so it is typed
    again every few seconds until a result shows, within the usual bound."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    result = page.locator(".md-search-result__item").first
    deadline = time.monotonic() + WAIT_MS / 1000
    field = page.locator("input.md-search__input")
    field.fill(query)
    while True:
        try:
            result.wait_for(timeout=10_000)
            return
        except PlaywrightTimeoutError:
            if time.monotonic() > deadline:
                raise
        field.press("End")
        field.type(" ")  # a new input event runs the query again
        field.press("Backspace")
