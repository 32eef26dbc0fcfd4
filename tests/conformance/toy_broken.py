"""Deliberately broken variants of the toy backend: each must fail a named scenario."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from memory_core import Conversation, Message
from memory_core import requests as rq
from memory_core.conformance.example_backend import ToyStore


class IgnoresSessionInSearch(ToyStore):
    """Searches every session even when one is given (the reference's tenant leak)."""

    name: ClassVar[str] = "toy-search-leak"

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        unscoped = dataclasses.replace(req, target=None)
        return await super().search_messages(unscoped)


class DeleteRaises(ToyStore):
    """Claims delete_message but the hook blows up (the reference's ConstraintError)."""

    name: ClassVar[str] = "toy-delete-raises"

    async def delete_message(self, req: rq.DeleteMessage) -> bool:
        raise RuntimeError("Node still has relationships")


class KeepsOldest(ToyStore):
    """Returns the oldest N messages for limit=N instead of the newest."""

    name: ClassVar[str] = "toy-keeps-oldest"

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        everything = rq.GetConversation(target=req.target, limit=10**9, since=req.since)
        conversation = await super().get_conversation(everything)
        return conversation.model_copy(update={"messages": conversation.messages[: req.limit]})


class DropsMetadata(ToyStore):
    """Claims message_metadata but silently stores none."""

    name: ClassVar[str] = "toy-drops-metadata"

    async def add_message(self, req: rq.AddMessage) -> Message:
        return await super().add_message(dataclasses.replace(req, metadata={}))
