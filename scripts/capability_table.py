"""Write (or check) the README's generated tables: the capability table from each
backend's declared flags, and the hook table from the docstrings of the contract's hooks.

python scripts/capability_table.py --write   # rewrite the table in README.md
python scripts/capability_table.py --check   # exit 1 when README.md is stale
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

from memory_core import Capabilities, store_class
from memory_core.capabilities import FLAG_DOCS, LIMIT_DOCS
from memory_core.interface import DEFAULTED_HOOKS, HOOKS_FOR_FLAG, Store

README = Path(__file__).resolve().parent.parent / "README.md"
START, END = "<!-- capability-table:start -->", "<!-- capability-table:end -->"
HOOK_START, HOOK_END = "<!-- hook-table:start -->", "<!-- hook-table:end -->"
COLUMNS = {"embedded": "memory", "bolt": "bolt", "nams": "nams"}


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "—"
    return "no cap" if value is None else str(value)


def table() -> str:
    """The Markdown table: one row per flag and limit, one column per built-in backend."""
    caps: dict[str, Capabilities] = {
        name: store_class(scheme).capabilities for name, scheme in COLUMNS.items()
    }
    # NAMS declares its flags per session mode; the class shows the default (portable).
    server_ids = getattr(store_class("nams"), "server_capabilities", None)
    if isinstance(server_ids, Capabilities):
        caps["nams (server ids)"] = server_ids
    lines = [
        "| capability | meaning | " + " | ".join(caps) + " |",
        "| --- | --- | " + " | ".join("---" for _ in caps) + " |",
    ]
    for name, meaning in {**FLAG_DOCS, **LIMIT_DOCS}.items():
        cells = " | ".join(_cell(getattr(c, name)) for c in caps.values())
        lines.append(f"| `{name}` | {meaning} | {cells} |")
    return "\n".join(lines)


def hook_table() -> str:
    """The Markdown table of the store interface's hooks: when each is required, and its
    docstring folded onto one line."""
    required_by = {hook: flag for flag, hooks in HOOKS_FOR_FLAG.items() for hook in hooks}
    lines = ["| hook | required | what it must do |", "| --- | --- | --- |"]
    for name, member in vars(Store).items():
        abstract = getattr(member, "__isabstractmethod__", False)
        if not (abstract or name in required_by or name in DEFAULTED_HOOKS):
            continue
        if name in required_by:
            when = f"when `{required_by[name]}`"
        elif abstract:
            when = "always"
        else:
            when = "optional (has a default)"
        lines.append(f"| `{name}` | {when} | {_markdown(inspect.getdoc(member) or '')} |")
    return "\n".join(lines)


def _markdown(doc: str) -> str:
    """A reST docstring as one line of Markdown."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", " ".join(doc.split()))
    return text.replace("``", "`").replace("|", "/")


def _replace(text: str, start: str, end: str, body: str) -> str:
    head, _, rest = text.partition(start)
    _, _, tail = rest.partition(end)
    return f"{head}{start}\n{body}\n{end}{tail}"


def render(text: str) -> str:
    """``text`` with the blocks between the markers replaced by the current tables."""
    text = _replace(text, START, END, table())
    return _replace(text, HOOK_START, HOOK_END, hook_table())


def main(argv: list[str]) -> int:
    text = README.read_text(encoding="utf-8")
    fresh = render(text)
    if argv == ["--write"]:
        README.write_text(fresh, encoding="utf-8")
        return 0
    if argv == ["--check"]:
        if fresh != text:
            print(
                "README.md generated tables are stale: python scripts/capability_table.py --write"
            )
            return 1
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
