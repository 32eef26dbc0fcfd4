"""The promise sentences of the documentation and the registry of the tests that guard them.

A *promise sentence* is a sentence of a hand-written page (README.md, docs/*.md,
docs/frameworks/*.md but not docs/benchmarks.md; not the text a page includes, a code
block nor a generated table) that uses normative wording (:data:`NORMATIVE`), or the
first sentence of a paragraph or list item led by bold text. The registry
(``promises.toml`` beside this module) lists each one under its page with the
conformance scenarios and/or pytest node ids that guard it, or waives it with a reason
when the wording is normative but the sentence promises nothing. :func:`problems` is
what the docs test enforces.

Run ``python -m tests.docs.promises`` to print registry entries for the sentences that
have none (to paste into ``promises.toml`` and complete).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = Path(__file__).with_name("promises.toml")

NORMATIVE = re.compile(
    r"\b(?:never|always|every|exactly|at most|at least|must|cannot|can't|nothing|none"
    r"|refuses?|refused|rejects?|rejected|raises?|raised|guarantees?|guaranteed"
    r"|is an error|(?:is|are) kept)\b",
    re.IGNORECASE,
)
# Pages of measurements, not behaviour.
EXCLUDED_PAGES = frozenset({"docs/benchmarks.md"})

_FENCE = re.compile(r"^\s*(```|~~~)")
_GENERATED = re.compile(r"^<!-- ([\w-]+):start -->$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.) ")
_LINK = re.compile(r"\[([^\]\n]+)\]\([^)\s]+\)")
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\[*\"_])")
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf)\.$")
_BOLD_TITLE = re.compile(r"\*\*[^*]+\*\*")
_TEST_ID = re.compile(r"^(tests/[\w/]+\.py)::(\w+)(?:::(\w+))?$")


def pages(root: Path = ROOT) -> list[str]:
    """The hand-written pages, as paths from the repository root."""
    found = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    found += sorted((root / "docs" / "frameworks").glob("*.md"))
    names = [path.relative_to(root).as_posix() for path in found]
    return [name for name in names if name not in EXCLUDED_PAGES]


def _blocks(text: str) -> Iterator[tuple[str, bool]]:
    """Paragraphs, list items and table rows, each with whether it is a table row, outside
    code, comments and generated regions (a page's ``<!-- include: ... -->`` line is a
    comment: included text is not the page's own)."""
    current: list[str] = []
    fenced, generated = False, ""
    for line in text.splitlines():
        stripped = line.strip()
        if generated:
            generated = "" if stripped == f"<!-- {generated}:end -->" else generated
            continue
        starts = _GENERATED.match(stripped)
        ends_block = (
            bool(starts)
            or bool(_FENCE.match(line))
            or fenced
            or not stripped
            or stripped.startswith(("#", "<!--", "|"))
            or bool(_ITEM.match(line))
        )
        if ends_block and current:
            yield " ".join(current), False
            current = []
        if starts:
            generated = starts.group(1)
        elif _FENCE.match(line):
            fenced = not fenced
        elif fenced or not stripped or stripped.startswith(("#", "<!--")):
            continue
        elif stripped.startswith("|"):
            if not re.fullmatch(r"[|\s:-]+", stripped):
                yield stripped.strip("|").strip(), True
        else:
            current.append(_ITEM.sub("", line, count=1).strip())
    if current:
        yield " ".join(current), False


def normalise(text: str) -> str:
    """Link targets dropped (the label kept) and whitespace collapsed."""
    return re.sub(r"\s+", " ", _LINK.sub(r"\1", text)).strip()


def _split(block: str) -> list[str]:
    found: list[str] = []
    pending = ""
    for part in _SPLIT.split(normalise(block)):
        pending = f"{pending} {part}" if pending else part
        if not _ABBREVIATION.search(pending):
            found.append(pending)
            pending = ""
    return [*found, pending] if pending else found


def sentences(text: str) -> list[str]:
    """The sentences of a Markdown text, normalised, in document order."""
    return [sentence for block, _ in _blocks(text) for sentence in _split(block)]


def promise_sentences(text: str) -> list[str]:
    """The sentences of a Markdown text that use normative wording, and the first sentence
    of each paragraph or list item led by bold text (``- **Mentions** ...``: the form of
    the documented promises and rules). A bold line alone, the title of a group of
    bullets, is not a sentence."""
    found: list[str] = []
    for block, row in _blocks(text):
        parts = _split(block)
        for index, sentence in enumerate(parts):
            if _BOLD_TITLE.fullmatch(sentence):
                continue
            bold_led = index == 0 and sentence.startswith("**") and not row
            if NORMATIVE.search(sentence) or bold_led:
                found.append(sentence)
    return found


@dataclass(frozen=True)
class Entry:
    """One registry entry: a sentence of a page and what guards it, or why it is waived."""

    page: str
    sentence: str
    guards: tuple[str, ...] = ()
    waived: str = ""
    weak: str = ""  # why the guards check the sentence only in part

    def key(self) -> tuple[str, str]:
        return self.page, normalise(self.sentence)


def load(text: str) -> list[Entry]:
    """The entries of a registry text (TOML: ``[[promise]]`` tables)."""
    return [
        Entry(
            page=item["page"],
            sentence=item["sentence"],
            guards=tuple(item.get("guards", ())),
            waived=item.get("waived", ""),
            weak=item.get("weak", ""),
        )
        for item in tomllib.loads(text).get("promise", [])
    ]


@dataclass
class Known:
    """What a guard may name: scenario ids, and the test functions of each test file."""

    scenarios: set[str]
    root: Path = ROOT
    _tests: dict[str, set[str]] = field(default_factory=dict)

    def tests_in(self, path: str) -> set[str] | None:
        """``name`` and ``Class::name`` of the tests a file defines; None if no such file."""
        if path not in self._tests:
            file = self.root / path
            if not file.is_file():
                return None
            self._tests[path] = set(_test_names(ast.parse(file.read_text(encoding="utf-8"))))
        return self._tests[path]


def _test_names(tree: ast.Module) -> Iterator[str]:
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    for node in tree.body:
        if isinstance(node, functions):
            yield node.name
        elif isinstance(node, ast.ClassDef):
            yield node.name
            yield from (f"{node.name}::{m.name}" for m in node.body if isinstance(m, functions))


def guard_problem(guard: str, known: Known) -> str:
    """Why ``guard`` names nothing that exists, or ``""``."""
    match = _TEST_ID.match(guard)
    if not match:
        if guard in known.scenarios:
            return ""
        return f"{guard!r} is neither a conformance scenario id nor tests/...py::test_name"
    path, name, method = match.groups()
    names = known.tests_in(path)
    if names is None:
        return f"{guard!r}: there is no file {path}"
    wanted = f"{name}::{method}" if method else name
    return "" if wanted in names else f"{guard!r}: {path} defines no {wanted}"


def _entry_problems(entry: Entry, known: Known) -> Iterator[str]:
    where = f"{entry.page}: {entry.sentence!r}"
    if bool(entry.guards) == bool(entry.waived):
        yield f"{where} needs exactly one of guards (tests) or waived (a reason)"
    if entry.weak and not entry.guards:
        yield f"{where} is weak but names no guards"
    for guard in entry.guards:
        problem = guard_problem(guard, known)
        if problem:
            yield f"{where}: {problem} (name an existing scenario or test)"


def problems(documented: dict[str, list[str]], entries: Iterable[Entry], known: Known) -> list[str]:
    """What is wrong between the promise sentences of each page (``documented``) and the
    registry: an unregistered sentence, an entry whose sentence the page no longer has, a
    duplicate entry, an entry with nothing guarding it, a guard that does not exist."""
    found: list[str] = []
    registered: dict[tuple[str, str], Entry] = {}
    for entry in entries:
        if entry.key() in registered:
            found.append(f"{entry.page}: {entry.sentence!r} is registered twice")
        registered[entry.key()] = entry
        found += _entry_problems(entry, known)
    present = {(page, text) for page, texts in documented.items() for text in texts}
    for page, texts in documented.items():
        found += [
            f"{page}: promise sentence {text!r} is not in tests/docs/promises.toml: add a "
            "[[promise]] entry naming the scenarios or tests that guard it (or waive it "
            "with a reason if it promises nothing)"
            for text in texts
            if (page, text) not in registered
        ]
    found += [
        f"{page}: tests/docs/promises.toml lists {text!r}, which the page no longer has: "
        "update the entry to the sentence as it now reads, or remove it"
        for page, text in registered
        if (page, text) not in present
    ]
    return found


def documented(root: Path = ROOT) -> dict[str, list[str]]:
    """The promise sentences of every hand-written page."""
    return {
        page: promise_sentences((root / page).read_text(encoding="utf-8")) for page in pages(root)
    }


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main() -> int:
    """Print a registry entry to complete for every sentence the registry lacks."""
    entries = load(REGISTRY.read_text(encoding="utf-8")) if REGISTRY.exists() else []
    registered = {entry.key() for entry in entries}
    for page, texts in documented().items():
        for text in texts:
            if (page, text) not in registered:
                print(f"[[promise]]\npage = {_toml_string(page)}")
                print(f"sentence = {_toml_string(text)}\nguards = []\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
