"""Reasoning memory over the NAMS wire: none of the contract's flags.

The hosted service records reasoning flat: ``POST /reasoning/steps`` adds a step
(``reasoning``, ``actionTaken``, ``result``) to a conversation, ``POST
/reasoning/tool-calls`` a tool call to a step, and ``GET
/reasoning/trace/{conversationId}`` reads a conversation's steps and calls back. It has no
trace: nothing on the wire holds a task, an outcome or a completion time, reads a trace
by id, or lists traces. A step carries no metadata and a tool call no error. So the
``traces`` flag, whose every hook must keep what it is given, cannot be honoured; the
reference library fakes the trace in the client's memory (lost when the process ends,
and seen by no other client), which memory-core does not do. ``tool_stats``,
``similar_traces`` and ``trace_links`` have no route either. Every reasoning call raises
``NotSupportedError`` with the workaround below, and nothing is sent.
"""

from __future__ import annotations

_KEEP = "keep traces with the Bolt, PostgreSQL or embedded backend"

WORKAROUNDS = {
    "traces": "NAMS records steps per conversation but has no trace to start, complete, "
    f"read or list: {_KEEP}, or in your application",
    "tool_stats": f"NAMS does not count tool calls: {_KEEP}, whose tool_stats counts "
    "them, or count them in your application",
    "similar_traces": f"NAMS cannot search traces or steps: {_KEEP}, or search them in "
    "your application",
    "trace_links": f"NAMS has no trace to link to messages or entities: {_KEEP}, or keep "
    "the links in your application",
}
"""What a refusal on NAMS suggests, per reasoning flag it lacks."""
