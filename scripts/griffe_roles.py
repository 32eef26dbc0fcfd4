"""A griffe extension for the API reference (``mkdocs.yml``): the package's docstrings
are reST, whose roles (``:class:`~memory_core.Limits```) Markdown would print as they are.
Each role becomes inline code naming the object (the last part after ``~``, as Sphinx
shows it), and ````double```` backticks single ones."""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension, Object

_ROLE = re.compile(r":[a-z]+:`(~?)([^`]+)`")


def plain(text: str) -> str:
    """``text`` with reST roles and double backticks as Markdown inline code."""

    def code(match: re.Match[str]) -> str:
        short, target = match.groups()
        return f"`{target.rsplit('.', 1)[-1] if short else target}`"

    return _ROLE.sub(code, text).replace("``", "`")


class ReSTRoles(Extension):
    """Rewrites every docstring once it is loaded."""

    def on_object(self, *, obj: Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
