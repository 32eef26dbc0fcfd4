"""Write (or check) the README's capability table from each backend's declared flags.

python scripts/capability_table.py --write   # rewrite the table in README.md
python scripts/capability_table.py --check   # exit 1 when README.md is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

from memory_core import Capabilities, backend_class
from memory_core.capabilities import FLAG_DOCS, LIMIT_DOCS

README = Path(__file__).resolve().parent.parent / "README.md"
START, END = "<!-- capability-table:start -->", "<!-- capability-table:end -->"
COLUMNS = {"embedded": "memory", "bolt": "bolt", "nams": "nams"}


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "—"
    return "no cap" if value is None else str(value)


def table() -> str:
    """The Markdown table: one row per flag and limit, one column per built-in backend."""
    caps: dict[str, Capabilities] = {
        name: backend_class(scheme).capabilities for name, scheme in COLUMNS.items()
    }
    # NAMS declares its flags per session mode; the class shows the default (portable).
    server_ids = getattr(backend_class("nams"), "server_capabilities", None)
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


def render(text: str) -> str:
    """``text`` with the block between the markers replaced by the current table."""
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{table()}\n{END}{tail}"


def main(argv: list[str]) -> int:
    text = README.read_text(encoding="utf-8")
    fresh = render(text)
    if argv == ["--write"]:
        README.write_text(fresh, encoding="utf-8")
        return 0
    if argv == ["--check"]:
        if fresh != text:
            print("README.md capability table is stale: python scripts/capability_table.py --write")
            return 1
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
