"""Small functions: none in the package is over 80 lines (its docstring included), and
the server's route table and its command-line parser are built by functions of at most
50 lines each (they had grown to 155 and 137)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "memory_core"


def _lengths(path: Path) -> dict[str, int]:
    """Every function and method of ``path`` (nested ones apart) → its lines."""
    found = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            found[f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}"] = (
                node.end_lineno - node.lineno + 1
            )
    return found


def test_no_function_of_the_package_is_over_80_lines() -> None:
    lengths = {k: v for path in PACKAGE.rglob("*.py") for k, v in _lengths(path).items()}
    assert len(lengths) > 1000  # the walk sees the package
    assert {k: v for k, v in lengths.items() if v > 80} == {}


def test_the_route_table_and_the_cli_parser_are_built_in_functions_of_at_most_50_lines() -> None:
    app = _lengths(PACKAGE / "server" / "app.py")
    routes = {k: v for k, v in app.items() if k.endswith(("_routes", "_router"))}
    assert len(routes) >= 5, routes
    cli = _lengths(PACKAGE / "server" / "cli.py")
    assert {k: v for k, v in {**routes, **cli}.items() if v > 50} == {}
