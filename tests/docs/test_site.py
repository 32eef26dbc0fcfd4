"""The documentation site, built strict and opened in a real browser (Debian's headless
chromium, driven by playwright; no browser is downloaded).

The site is served on 127.0.0.1 from a thread, and opened from disk (file://) as a user
who builds it and opens site/index.html does. Every request the browser makes is
intercepted: one for another host is recorded and aborted, and the test fails. A
screenshot of the home page is kept in docs/_build-check/ (git-ignored; a CI artifact).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

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
        "frameworks/langgraph.html", "frameworks/agent-framework.html", "frameworks/adk.html",
        "frameworks/crewai.html",
        "mcp.html", "server.html", "limits.html", "transfer.html", "differences.html",
        "writing-a-backend.html", "conformance.html", "scenarios.html", "turns.html",
        "reliability.html", "benchmarks.html", "reference/api.html",
        "reference/interface.html", "reference/errors.html", "reference/models.html",
        "changelog.html", "contributing.html",
    ]  # fmt: skip
    assert [page for page in pages if not (site / page).is_file()] == []
    import memory_core

    assert f"memory-core {memory_core.__version__}" in (site / "index.html").read_text()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's headless chromium, for the module."""
    assert CHROMIUM.exists(), "needs Debian's chromium: apt-get install chromium (.ci/run does)"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # Generous waits: on a loaded 2-core CI machine chromium may take long to start or
        # draw; they bound a hang, they measure nothing.
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=FLAGS, timeout=WAIT_MS
        )
        yield launched
        launched.close()


class _Visit:
    """A browser context at 1280 x 900 that lets requests reach only ``allowed`` (a
    host, or ``file`` for pages opened from disk) and records the rest, the console
    errors and the requests that failed."""

    def __init__(self, browser: Browser, allowed: str) -> None:
        from playwright.sync_api import Route

        self.allowed = allowed
        self.left: list[str] = []
        self.errors: list[str] = []
        self.context: BrowserContext = browser.new_context(viewport={"width": 1280, "height": 900})
        self.context.set_default_timeout(WAIT_MS)
        self.context.set_default_navigation_timeout(WAIT_MS)

        def only_allowed(route: Route) -> None:
            if self._may_load(route.request.url):
                route.continue_()
            else:
                self.left.append(route.request.url)
                route.abort()

        self.context.route("**/*", only_allowed)
        self.context.on("request", self._request)
        self.context.on("requestfailed", self._failed)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def _may_load(self, url: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme == "file" if self.allowed == "file" else parts.netloc == self.allowed

    def _request(self, request: Any) -> None:
        if not self._may_load(request.url):
            self.left.append(request.url)

    def _failed(self, request: Any) -> None:
        # A request the next navigation cancels (a favicon still loading) is no error.
        if request.failure != "net::ERR_ABORTED":
            self.errors.append(f"failed: {request.url} ({request.failure})")

    def close(self) -> None:
        """Close the context; fail when a request left the site or something failed."""
        self.context.close()
        assert self.left == [], f"requests left the site: {self.left}"
        assert self.errors == [], f"console errors and failed requests: {self.errors}"


def test_the_site_in_a_browser(base_url: str, browser: Browser) -> None:
    visit = _Visit(browser, urlsplit(base_url).netloc)
    page = visit.page
    page.goto(f"{base_url}/index.html", wait_until="networkidle")
    assert "One async API for AI-agent conversation memory" in page.inner_text("article")
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "home.png"), full_page=False)

    page.goto(f"{base_url}/reference/api.html", wait_until="networkidle")
    assert "MemoryBackend" in page.inner_text("article")
    assert page.locator("[id='memory_core.MemoryBackend.add_message']").count() == 1

    _search(page, "NotSupportedError")
    assert "NotSupportedError" in page.inner_text(".md-search-result")
    visit.close()


def test_search_works_from_disk(site: Path, browser: Browser) -> None:
    """site/ opened from disk: the search box shows and finds a word (the index is a
    script and the worker runs in an iframe, docs/assets/javascripts/iframe-worker.js)."""
    visit = _Visit(browser, "file")
    visit.page.goto((site / "frameworks" / "langchain.html").as_uri(), wait_until="load")
    assert visit.page.locator("input.md-search__input").is_visible()
    _search(visit.page, "NotSupportedError")
    assert "NotSupportedError" in visit.page.inner_text(".md-search-result")
    visit.close()


def test_404_is_styled_from_a_copy_in_a_sub_folder(
    site: Path, browser: Browser, tmp_path: Path
) -> None:
    copy = tmp_path / "deeper" / "still" / "site"
    shutil.copytree(site, copy)
    visit = _Visit(browser, "file")
    visit.page.goto((copy / "404.html").as_uri(), wait_until="load")
    header = visit.page.eval_on_selector(
        ".md-header", "e => [getComputedStyle(e).position, getComputedStyle(e).backgroundColor]"
    )
    assert header[0] == "sticky" and header[1] != "rgba(0, 0, 0, 0)"  # Material's header
    sheets = visit.page.eval_on_selector_all("link[rel=stylesheet]", "ls => ls.map(l => l.href)")
    assert sheets and all(sheet.startswith(copy.as_uri() + "/") for sheet in sheets)
    visit.close()


# In the content column of a page: the page's own horizontal overflow; elements running
# past the column but not inside a box that scrolls and ends within it; each word of a
# code span in a table cell laid out on more than one line (a name broken mid-word); API
# signatures wider than their box (they are formatted to fit and wrap, never scroll).
_LAYOUT = r"""() => {
  const scrollsWithin = (box, right) =>
    ["auto", "scroll"].includes(getComputedStyle(box).overflowX)
    && box.getBoundingClientRect().right <= right;
  const found = {page: [], escaping: [], broken: [], signatures: []};
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth) found.page.push(root.scrollWidth);
  const column = document.querySelector(".md-content");
  const right = column.getBoundingClientRect().right + 1;
  for (const element of column.querySelectorAll("*")) {
    if (element.getBoundingClientRect().right <= right) continue;
    let box = element.parentElement;
    while (box !== column && !scrollsWithin(box, right)) box = box.parentElement;
    if (box === column) found.escaping.push(`${element.tagName}: ${element.textContent}`);
  }
  const range = document.createRange();
  for (const code of column.querySelectorAll("td code, th code")) {
    const texts = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    for (let text = texts.nextNode(); text; text = texts.nextNode()) {
      for (const word of text.data.matchAll(/\S+/g)) {
        range.setStart(text, word.index);
        range.setEnd(text, word.index + word[0].length);
        const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        if (lines.size > 1) found.broken.push(word[0]);
      }
    }
  }
  for (const code of column.querySelectorAll(".doc-signature code")) {
    if (code.scrollWidth > code.clientWidth) {
      found.signatures.push(code.textContent.split("\n")[0]);
    }
  }
  return found;
}"""


@pytest.fixture(scope="module")
def layout(site: Path, browser: Browser) -> dict[str, dict[str, list[Any]]]:
    """What ``_LAYOUT`` finds on every page opened from disk at 1280 px wide, and under
    ``"errors"`` the requests that left the site, failed, or the console errors."""
    visit = _Visit(browser, "file")
    found: dict[str, dict[str, list[Any]]] = {}
    for path in sorted(site.rglob("*.html")):
        visit.page.goto(path.as_uri(), wait_until="load")
        found[path.relative_to(site).as_posix()] = visit.page.evaluate(_LAYOUT)
    visit.context.close()
    assert len(found) > 30
    found["errors"] = {"left": visit.left, "errors": visit.errors}
    return found


def test_every_page_opens_from_disk(layout: dict[str, Any]) -> None:
    assert layout["errors"] == {"left": [], "errors": []}


def _where(layout: dict[str, dict[str, list[Any]]], check: str) -> dict[str, list[Any]]:
    pages = {page: found for page, found in layout.items() if page != "errors"}
    return {page: found[check] for page, found in pages.items() if found[check]}


def test_no_page_overflows_its_window_at_1280_px(layout: dict[str, Any]) -> None:
    assert _where(layout, "page") == {}
    assert _where(layout, "escaping") == {}


def test_code_in_table_cells_never_breaks_inside_a_word(layout: dict[str, Any]) -> None:
    broken = _where(layout, "broken")
    assert "capabilities.html" in layout  # the flag names of the capabilities table
    assert broken == {}


def test_api_signatures_fit_their_box(layout: dict[str, Any]) -> None:
    assert layout["reference/api.html"]["signatures"] == []
    assert _where(layout, "signatures") == {}


def test_the_docs_extra_installs_a_signature_formatter() -> None:
    """mkdocstrings formats signatures with black or ruff when one is installed, and
    leaves each on one line otherwise: the docs extra must bring one."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    docs = project["project"]["optional-dependencies"]["docs"]
    names = {re.split(r"[^A-Za-z0-9._-]", requirement, maxsplit=1)[0] for requirement in docs}
    assert names & {"ruff", "black"}


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
