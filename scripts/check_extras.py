"""Check that every third-party import in ``memory_core`` is declared where it is needed.

python scripts/check_extras.py      # exit 1 and name every undeclared import

A module may import, without a guard, only distributions listed *directly* in the core
``dependencies`` or in the extra that owns the module (``OWNERS``; an extra that lists
``memory-core[a,b]`` includes a's and b's). Being installed as someone else's dependency
does not count: that is how ``sniffio`` broke the default backend when anyio stopped
requiring it. Imports under ``if TYPE_CHECKING:`` never run and are not checked; an import
inside ``try:`` whose handler catches ``ImportError`` is guarded and may name anything.

Import names map to distributions through the installed metadata of the environment this
runs in (the dev environment, where every extra is installed but those of ``ISOLATED``).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "memory_core"
CORE = ""
"""The owner name of modules that need no extra."""

OWNERS: dict[str, str] = {
    "memory_core.server": "server",
    "memory_core.conformance": "conformance",
    "memory_core.telemetry.runtime": "otel",
    "memory_core.embedding_wordllama": "embed",
    "memory_core.embedding_minilm": "minilm",
    "memory_core.integrations.langchain": "langchain",
    "memory_core.integrations.openai_agents": "openai-agents",
    "memory_core.integrations.pydantic_ai": "pydantic-ai",
    "memory_core.integrations.llamaindex": "llamaindex",
    "memory_core.integrations.strands": "strands",
    "memory_core.integrations.agent_framework": "agent-framework",
    "memory_core.integrations.adk": "adk",
    "memory_core.integrations.crewai": "crewai",
    "memory_core.integrations.langgraph": "langgraph",
    "memory_core.integrations.mcp_server": "mcp",
}
"""Module (or package) → the extra it needs; the longest matching prefix wins, every
other module belongs to the core. A built-in store's folder is added from the registry
(:func:`registered_owners`): a new backend names its extra there, once."""

ISOLATED: dict[str, list[str]] = {"crewai": ["crewai"]}
"""Import name → distributions of the extras tested in an environment of their own
(``locks/NAME.txt``, ``scripts/test_isolated NAME``), so never installed where this runs."""


def provided() -> dict[str, list[str]]:
    """Import name → the distributions providing it: this environment's, and
    :data:`ISOLATED`'s."""
    return {**ISOLATED, **packages_distributions()}


def registered_owners() -> dict[str, str]:
    """:data:`OWNERS` and each built-in store's package → the extra its registry entry
    names (``memory_core.registry.built_in``)."""
    sys.path.insert(0, str(ROOT))
    from memory_core.registry import built_in

    found = dict(OWNERS)
    for spec in built_in().values():
        if spec.extra:
            found[spec.path.partition(":")[0]] = spec.extra
    return found


_GUARDS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


@dataclass(frozen=True)
class Use:
    """One unguarded import of a third-party top-level module."""

    module: str
    line: int
    top: str


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(spec: str) -> tuple[str, list[str]]:
    """``"memory-core[a,b]>=1"`` → ``("memory-core", ["a", "b"])``."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?", spec)
    if not match:
        raise ValueError(f"unreadable requirement {spec!r}")
    extras = [e.strip() for e in (match.group(2) or "").split(",") if e.strip()]
    return canonical(match.group(1)), extras


def declared(project: Mapping[str, object], extra: str) -> set[str]:
    """The distributions listed directly in the core plus ``extra`` (and the extras it
    includes by naming the project itself)."""
    own = canonical(str(project["name"]))
    optional: Mapping[str, list[str]] = project.get("optional-dependencies", {})  # type: ignore[assignment]
    found: set[str] = set()
    seen: set[str] = set()
    todo = [CORE, extra]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        specs = project["dependencies"] if name == CORE else optional.get(name)
        if specs is None:
            raise ValueError(f"no extra named {name!r} in pyproject.toml")
        for spec in specs:  # type: ignore[attr-defined]
            dist, extras = requirement_name(spec)
            if dist == own:
                todo.extend(extras)
            else:
                found.add(dist)
    return found


def owner(module: str, owners: Mapping[str, str] = OWNERS) -> str:
    """The extra ``module`` needs (:data:`CORE` for none)."""
    best = ""
    for prefix in owners:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
            best = prefix
    return owners[best] if best else CORE


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type
    if kinds is None:
        return True
    names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
    return any(isinstance(n, ast.Name) and n.id in _GUARDS for n in names)


def _unguarded(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for inner in child.orelse:
                yield from _unguarded_stmt(inner)
        elif isinstance(child, ast.Try) and any(map(_catches_import_error, child.handlers)):
            for part in (child.handlers, child.orelse, child.finalbody):
                for inner in part:
                    yield from _unguarded_stmt(inner)
        else:
            yield from _unguarded(child)


def _unguarded_stmt(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    else:
        yield from _unguarded(node)


def third_party(tree: ast.AST, module: str, package: str = PACKAGE) -> Iterator[Use]:
    """The unguarded imports in ``tree`` of modules outside the stdlib and ``package``."""
    for node in _unguarded(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level or not node.module:
                continue
            names = [node.module]
        else:
            names = [alias.name for alias in node.names]
        for name in names:
            top = name.partition(".")[0]
            if top in sys.stdlib_module_names or top in (package, "__future__"):
                continue
            yield Use(module, node.lineno, top)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def problems(
    root: Path,
    project: Mapping[str, object],
    distributions: Mapping[str, list[str]],
    owners: Mapping[str, str] = OWNERS,
    package: str = PACKAGE,
) -> list[str]:
    """Every unguarded third-party import under ``root/package`` not declared for its
    module's extra, as one line each."""
    found: list[str] = []
    allowed: dict[str, set[str]] = {}
    for path in sorted((root / package).rglob("*.py")):
        module = module_name(path, root)
        extra = owner(module, owners)
        if extra not in allowed:
            allowed[extra] = declared(project, extra)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for use in third_party(tree, module, package):
            dists = {canonical(d) for d in distributions.get(use.top, [])}
            where = f"{path.relative_to(root)}:{use.line}"
            needs = f"the '{extra}' extra" if extra else "the core dependencies"
            if not dists:
                found.append(
                    f"{where}: imports {use.top!r}, which no installed distribution provides"
                )
            elif not dists & allowed[extra]:
                found.append(
                    f"{where}: imports {use.top!r} (from {', '.join(sorted(dists))}), "
                    f"not declared in {needs}"
                )
    return found


def main() -> int:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = problems(ROOT, project, provided(), registered_owners())
    for line in found:
        print(line, file=sys.stderr)
    if found:
        print(f"check_extras: {len(found)} undeclared import(s)", file=sys.stderr)
        return 1
    print("check_extras: every third-party import is declared for its module's extra")
    return 0


if __name__ == "__main__":
    sys.exit(main())
