"""Check the import graph of the ``memory_core`` package: no cycles, and the layout's
directions (DESIGN: the core imports no backend, a backend imports the store authors'
face of the core only (``memory_core.store``), no backend imports another, nothing
imports the server or the conformance suite except themselves and the CLI).

python scripts/check_imports.py      # exit 1 and name every cycle and wrong-way import

Every import counts: also one inside a function (a lazy import still ties the two
modules together) and one under ``if TYPE_CHECKING:`` (a circle of types is still a
circle: neither module can be read without the other). ``from pkg import name`` depends
on ``pkg.name`` where that is a module, else on the package's ``__init__``.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "memory_core"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def targets(name: str, is_package: bool, tree: ast.AST, known: set[str]) -> set[str]:
    """The modules of ``known`` that module ``name`` imports."""
    found: set[str] = set()
    package = name if is_package else name.rpartition(".")[0]
    for node in _imports(tree):
        if isinstance(node, ast.Import):
            bases = [alias.name for alias in node.names]
            candidates = bases
        else:
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            # ``from pkg import mod`` imports the module; ``from pkg import name``, the package
            candidates = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        for candidate in candidates:
            # the module itself where it is one, else the nearest package that is
            while candidate and candidate not in known:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name:
                found.add(candidate)
    return found


def graph(root: Path = ROOT, package: str = PACKAGE) -> dict[str, set[str]]:
    """Every module of ``package`` (a folder of ``root``) -> the modules it imports."""
    files = sorted((root / package).rglob("*.py"))
    names = {module_name(f, root): f for f in files}
    known = set(names)
    return {
        name: targets(name, path.name == "__init__.py", ast.parse(path.read_text()), known)
        for name, path in names.items()
    }


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _area(module: str) -> str:
    """``backends.<name>``, ``server``, ``conformance`` or ``core``."""
    parts = module.split(".")[1:]
    if parts[:1] == ["backends"] and len(parts) > 1:
        return f"backends.{parts[1]}"
    if parts[:1] in (["server"], ["conformance"]):
        return parts[0]
    return "core"


# what each area may import besides itself (the CLI starts the server and the suite)
ALLOWED = {
    "core": {"core"},
    "server": {"core"},
    "conformance": {"core"},
}
LAZY_ENTRY_POINTS = {"memory_core.cli"}  # imports the server/suite by dotted path only
STORE_FACE = "memory_core.store"
"""The one module of the core a backend's modules may import (the store authors' face)."""


def wrong_way(edges: dict[str, set[str]]) -> list[str]:
    found = []
    for source, imported in sorted(edges.items()):
        area = _area(source)
        for target in sorted(imported):
            other = _area(target)
            if other == area:
                continue
            if area.startswith("backends."):
                if target != STORE_FACE:
                    found.append(
                        f"{source} ({area}) imports {target} ({other}): a store imports "
                        f"only {STORE_FACE}, its own folder and third-party packages"
                    )
                continue
            allowed = ALLOWED.get(area, {"core"})
            if other not in allowed and source not in LAZY_ENTRY_POINTS:
                found.append(f"{source} ({area}) imports {target} ({other})")
    return found


def problems(edges: dict[str, set[str]]) -> list[str]:
    """Every cycle and every wrong-way import, one line each."""
    found = [f"import cycle: {' <-> '.join(c)}" for c in cycles(edges)]
    return found + [f"wrong direction: {line}" for line in wrong_way(edges)]


def main() -> int:
    edges = graph()
    found = problems(edges)
    for problem in found:
        print(problem)
    if found:
        return 1
    count = sum(len(v) for v in edges.values())
    print(f"{len(edges)} modules, {count} imports: no cycle, every import in its direction")
    return 0


if __name__ == "__main__":
    sys.exit(main())
