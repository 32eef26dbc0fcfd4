"""MkDocs hooks of the docs site (``mkdocs.yml``: ``hooks:``).

- ``<!-- include: PATH -->`` on a line of its own is replaced by the file at PATH (from
  the repository root), so RELIABILITY.md, the conformance suite's README, SCENARIOS.md,
  CONTRIBUTING.md, CHANGELOG.md and README.md stay single-sourced where they are. Their
  relative links are rewritten: to the page that includes the target, or, for a file
  the site does not publish (source code), to plain text.
- ``<!-- version -->`` is replaced by the installed package's version, which is also put
  into the site's name.
- A list that starts right after a paragraph line gets the blank line Python-Markdown
  needs to see a list there (GitHub needs none, so the sources do without).
- In a table cell, a code span of several words gets each word in a span of its own, so
  that it breaks only between words (``docs/assets/stylesheets/site.css`` keeps every
  code span in a cell from breaking inside a word).
- ``404.html`` links relatively, like every other page, so it is styled when opened
  from disk or from a copy of the site in any folder.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

import memory_core

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r"^<!-- include: (\S+) -->$", re.M)
LINK = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")
VERSION = "<!-- version -->"
LIST_ITEM = re.compile(r"^(?:[-*+]|\d+\.) ")
CELL = re.compile(r"<(td|th)\b[^>]*>.*?</\1>", re.S)
PLAIN_CODE = re.compile(r"<code>([^<]*\s[^<]*)</code>")

# repository file -> the docs page that publishes it
PUBLISHED = {
    "README.md": "index.md",
    "RELIABILITY.md": "reliability.md",
    "CHANGELOG.md": "changelog.md",
    "CONTRIBUTING.md": "contributing.md",
    "memory_core/conformance/README.md": "conformance.md",
    "memory_core/conformance/SCENARIOS.md": "scenarios.md",
}


def on_config(config: Any) -> Any:
    """Show the version in the site's header."""
    config.site_name = f"memory-core {memory_core.__version__}"
    return config


def on_template_context(context: Any, template_name: str, **_: Any) -> Any:
    """Relative links in ``404.html``. Without a ``site_url`` MkDocs links an error page
    from ``/``, the server's root, so a copy opened from disk or served from a sub-folder
    loads none of its stylesheets or scripts. Relative to the site's root folder instead,
    it works wherever the site is, when opened directly or served for a missing page there
    (a server that serves it for a missing page in a sub-folder shows it unstyled)."""
    if template_name == "404.html":
        context["base_url"] = "."
    return context


def on_page_content(html: str, **_: Any) -> str:
    """Code spans of several words in table cells, one span per word."""
    return CELL.sub(lambda cell: PLAIN_CODE.sub(_words, cell.group(0)), html)


def _words(code: re.Match[str]) -> str:
    words = re.sub(r"\S+", r"<span>\g<0></span>", code.group(1))
    return f'<code class="words">{words}</code>'


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Expand includes and the version marker of one page."""
    page_uri = page.file.src_uri

    def include(match: re.Match[str]) -> str:
        source = match.group(1)
        text = (ROOT / source).read_text(encoding="utf-8")
        return rewrite_links(text, source, page_uri)

    markdown = INCLUDE.sub(include, markdown)
    return separate_lists(markdown.replace(VERSION, memory_core.__version__))


def separate_lists(markdown: str) -> str:
    """A blank line before each list that follows a paragraph line directly (outside
    code blocks)."""
    out: list[str] = []
    fenced = False
    for line in markdown.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and LIST_ITEM.match(line) and out and _ends_paragraph(out[-1]):
            out.append("")
        out.append(line)
    return "\n".join(out)


def _ends_paragraph(line: str) -> bool:
    return bool(line.strip()) and not line[0].isspace() and not LIST_ITEM.match(line)


def rewrite_links(text: str, source: str, page_uri: str) -> str:
    """The relative links of ``source`` (a repository path), made to work from the docs
    page ``page_uri``."""
    base = posixpath.dirname(source)

    def fix(match: re.Match[str]) -> str:
        label, target = match.groups()
        if re.match(r"^[a-z][a-z0-9+.-]*:|^#", target):
            return match.group(0)  # a URL with a scheme, or an anchor of the same file
        path, _, anchor = target.partition("#")
        resolved = posixpath.normpath(posixpath.join(base, path))
        page = PUBLISHED.get(resolved)
        if page is None and resolved.startswith("docs/"):
            page = resolved.removeprefix("docs/")
        if page is None:
            return label  # source code and other files the site does not publish
        relative = posixpath.relpath(page, posixpath.dirname(page_uri) or ".")
        return f"[{label}]({relative}{'#' + anchor if anchor else ''})"

    return LINK.sub(fix, text)
