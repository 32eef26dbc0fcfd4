"""Scheme registry: lazy imports, install hints, and third-party entry points."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core import ConfigurationError, known_schemes, open_backend, store_class
from memory_core.registry import _registry, register_backend

TINY_BACKEND = '''
from memory_core import Capabilities, Conversation, ConversationPage, Message
from memory_core.interface import Store


class TinyStore(Store):
    """A third-party backend living outside memory-core."""

    name = "tiny"
    capabilities = Capabilities(client_chosen_ids=True, auto_create_conversation=True)

    def __init__(self, url, **options):
        super().__init__(**options)
        self.url = url
        self.data = {}

    async def connect(self):
        pass

    async def close(self):
        pass

    async def add_message(self, req):
        message = Message(role=req.role, content=req.content)
        self.data.setdefault(req.target.handle, []).append(message)
        return message

    async def add_messages(self, req):
        return [await self.add_message(m) for m in req.messages]

    async def create_conversation(self, req):
        return Conversation(session_id=req.target.handle)

    async def get_conversation(self, req):
        messages = self.data.get(req.target.handle, [])[-req.limit:]
        return Conversation(session_id=req.target.handle, messages=messages)

    async def list_conversations(self, req):
        return ConversationPage()

    async def search_messages(self, req):
        return []

    async def clear_session(self, target):
        return self.data.pop(target.handle, None) is not None
'''


@pytest.fixture(scope="module")
def tiny_package(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Build and pip-install a tiny backend package (outside this repo) into a target dir.

    Offline: no index and no build isolation (setuptools and wheel come with the dev extra),
    so the test sends nothing over the network."""
    tmp_path = tmp_path_factory.mktemp("tiny")
    source = tmp_path / "src"
    (source / "tiny_memory").mkdir(parents=True)
    (source / "tiny_memory" / "__init__.py").write_text(TINY_BACKEND)
    (source / "pyproject.toml").write_text(
        textwrap.dedent("""
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "tiny-memory"
        version = "1.0"

        [project.entry-points."memory_core.backends"]
        tinymem = "tiny_memory:TinyStore"

        [tool.setuptools]
        packages = ["tiny_memory"]
    """)
    )
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(target))
        yield target


@pytest.mark.anyio
async def test_third_party_backend_plugs_in_by_url(tiny_package: Path) -> None:
    assert "tinymem" in known_schemes()
    async with open_backend("tinymem://anything") as memory:
        assert type(memory.store).__module__ == "tiny_memory"
        await memory.add_message("s1", "user", "hello from a plugin")
        conversation = await memory.get_conversation("s1")
    assert [m.content for m in conversation.messages] == ["hello from a plugin"]


def test_missing_extra_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(_registry, "fancy", _registry["memory"])
    register_backend(
        "fancy", "memory_core_fancy_extra_missing:Backend", extra="fancy", replace=True
    )
    with pytest.raises(ConfigurationError, match=r'pip install "memory-core\[fancy\]"'):
        store_class("fancy")


def test_registering_a_taken_scheme_needs_replace() -> None:
    with pytest.raises(ConfigurationError, match="already registered"):
        register_backend("memory", "somewhere:Else")


def test_a_path_that_is_not_a_backend_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(_registry, "notabackend", _registry["memory"])
    register_backend("notabackend", "memory_core.models:Message", replace=True)
    with pytest.raises(ConfigurationError, match=r"not a memory_core\.interface\.Store"):
        store_class("notabackend")


def test_unknown_option_is_a_configuration_error(tiny_package: Path) -> None:
    with pytest.raises(ConfigurationError, match="colour"):
        open_backend("tinymem://x", colour="blue")
