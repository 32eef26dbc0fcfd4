"""The docs site's own tools: the MkDocs hooks (includes, links, lists), the reST roles
of the API reference, and the generator of the generated tables."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


hooks = _script("docs_hooks")
roles = _script("griffe_roles")
gen_docs = _script("gen_docs")
bench_docs = _script("bench_docs")


def test_links_of_an_included_file_point_at_the_pages_that_publish_them() -> None:
    text = (
        "[catalogue](SCENARIOS.md#documented-promises), [store](example_backend.py), "
        "[top](../../README.md), [web](https://example.org/x), [here](#running-it)"
    )
    fixed = hooks.rewrite_links(text, "memory_core/conformance/README.md", "conformance.md")
    assert fixed == (
        "[catalogue](scenarios.md#documented-promises), store, "
        "[top](index.md), [web](https://example.org/x), [here](#running-it)"
    )
    readme = hooks.rewrite_links("[Using it](docs/using.md)", "README.md", "frameworks/x.md")
    assert readme == "[Using it](../using.md)"


def test_a_list_right_after_a_paragraph_gets_its_blank_line() -> None:
    text = "**Every backend**\n- one\n  more\n- two\n\n```\nx\n- not a list\n```\n1. first"
    assert hooks.separate_lists(text) == (
        "**Every backend**\n\n- one\n  more\n- two\n\n```\nx\n- not a list\n```\n\n1. first"
    )


def test_a_code_span_of_several_words_in_a_table_cell_gets_a_span_per_word() -> None:
    html = (
        "<p><code>not a cell</code></p><table><tr><th><code>flag_name</code></th>"
        "<td><code>pytest  tests/x.py -k a-b</code> <code>one</code></td></tr></table>"
    )
    assert hooks.on_page_content(html) == (
        "<p><code>not a cell</code></p><table><tr><th><code>flag_name</code></th>"
        '<td><code class="words"><span>pytest</span>  <span>tests/x.py</span> '
        "<span>-k</span> <span>a-b</span></code> <code>one</code></td></tr></table>"
    )


def test_rest_roles_become_inline_code() -> None:
    assert roles.plain(
        "See :class:`~memory_core.Limits` and :func:`memory_core.open_backend`."
    ) == ("See `Limits` and `memory_core.open_backend`.")
    assert roles.plain("``x`` stays code") == "`x` stays code"


def test_the_generated_tables_are_current() -> None:
    pages = {path.name: text for path, text in gen_docs.generated().items()}
    for page in ("capabilities.md", "writing-a-backend.md", "benchmarks.md"):
        assert (ROOT / "docs" / page).read_text(encoding="utf-8") == pages[page], page
    assert "| `delete_message` |" in pages["capabilities.md"]
    assert "bench/results/latest.json" in pages["benchmarks.md"]


def test_the_benchmark_tables_answer_one_question_each() -> None:
    speed = gen_docs.bench_speed().splitlines()
    assert speed[0] == "| call | SQLite (embedded) | PostgreSQL | Neo4j (Bolt) | NAMS (HTTP) |"
    assert len(speed) == 2 + len(bench_docs.SPEED_ROWS)
    assert "| add 500 messages a call (throughput) |" in gen_docs.bench_speed()
    assert "| — |" in speed[4]  # NAMS has no batch of 500
    assert "neo4j-agent-memory" in gen_docs.bench_neo4j().splitlines()[0]
    assert "→" in gen_docs.bench_growth() and "128 agents" in gen_docs.bench_agents()
    assert [bench_docs.number(v) for v in (0.07054, 3.849, 24525.0)] == ["0.0705", "3.85", "24,500"]


def test_missing_markers_stop_the_generator() -> None:
    with pytest.raises(SystemExit, match="markers"):
        gen_docs._replace("no markers here", "capability-table", "body")
