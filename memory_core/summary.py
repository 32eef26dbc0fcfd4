"""Backend-neutral summary and context formatting built on the contract's reads."""

from __future__ import annotations

import inspect
import re
from collections import Counter
from collections.abc import Sequence

from .models import Message
from .requests import Summarizer

_WORD = re.compile(r"[^\W\d_]{4,}", re.UNICODE)
STOPWORDS = frozenset(
    "about above after again also been before being below between both could does doing "
    "down during each from further have having here hers herself himself into itself just "
    "more most myself once only other ours ourselves over same should some such than that "
    "their theirs them themselves then there these they this those through under until very "
    "were what when where which while whom with would your yours yourself yourselves".split()
)
PREVIEW_CHARS = 100


def key_terms(messages: Sequence[Message], count: int = 5) -> list[str]:
    """The most frequent non-stopword words (ties broken alphabetically)."""
    counts = Counter(
        w.lower() for m in messages for w in _WORD.findall(m.content) if w.lower() not in STOPWORDS
    )
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [word for word, _ in ranked[:count]]


def extractive_summary(messages: Sequence[Message], max_sentences: int = 3) -> str:
    """A deterministic summary: a count line plus the highest-scoring sentences.

    Sentences are scored by how many of the conversation's key terms they contain; ties
    keep conversation order. An empty conversation gives ``"(empty conversation)"``.
    """
    if not messages:
        return "(empty conversation)"
    terms = set(key_terms(messages, 10))
    sentences: list[tuple[int, int, str]] = []
    for m in messages:
        for part in re.split(r"(?<=[.!?])\s+", m.content.strip()):
            if part:
                score = sum(1 for w in _WORD.findall(part) if w.lower() in terms)
                sentences.append((score, len(sentences), f"{m.role.value}: {part}"))
    best = sorted(sentences, key=lambda s: (-s[0], s[1]))[:max_sentences]
    chosen = [text for _, _, text in sorted(best, key=lambda s: s[1])]
    roles = Counter(m.role.value for m in messages)
    count = f"{len(messages)} message{'' if len(messages) == 1 else 's'}"
    head = f"{count} (" + ", ".join(f"{n} {r}" for r, n in sorted(roles.items()))
    return head + "). " + " ".join(chosen)


async def run_summarizer(summarizer: Summarizer, messages: list[Message]) -> str:
    """Call a sync or async summarizer and return its text."""
    result = summarizer(messages)
    if inspect.isawaitable(result):
        result = await result
    if not isinstance(result, str):
        raise TypeError(f"summarizer returned {type(result).__name__}, expected str")
    return result


def preview(text: str) -> str:
    """The first ``PREVIEW_CHARS`` characters of a message, for listings."""
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


CHARS_PER_TOKEN = 4
MAX_NEIGHBOURS = 10
"""The most messages before (and after) each hit ``get_context(neighbours=...)`` adds."""
"""How many characters :func:`approx_tokens` counts as one token."""


def approx_tokens(text: str) -> int:
    """A rough token count of ``text``: its characters divided by :data:`CHARS_PER_TOKEN`,
    rounded up (about right for English with the tokenizers of most chat models; text in
    other scripts takes more tokens, so give those a smaller budget)."""
    return -(-len(text) // CHARS_PER_TOKEN)


_HEADINGS = {
    "reflections": "## Reflections",
    "observations": "## Observations",
    "recent": "## Recent messages",
    "relevant": "## Relevant messages",
}


def format_context(
    recent: Sequence[Message],
    relevant: Sequence[Message],
    observations: Sequence[str] = (),
    reflections: Sequence[str] = (),
    *,
    sessions: bool = False,
) -> str:
    """The documented ``get_context`` text.

    Sections appear only when they have lines, in this order::

        ## Reflections
        - <text>
        ## Observations
        - <text>
        ## Recent messages
        [<role>] <content>
        ## Relevant messages
        [<YYYY-MM-DD HH:MM>] [<role>] <content> (score 0.83)

    Recent messages come oldest first; relevant ones (search hits) in the order they were
    written, each with its time (UTC, to the minute) and, with ``sessions``, its session
    (``[2026-12-07 14:03, session s3]``).
    """
    blocks: list[str] = []
    if reflections:
        blocks.append(_block("reflections", [f"- {r}" for r in reflections]))
    if observations:
        blocks.append(_block("observations", [f"- {o}" for o in observations]))
    if recent:
        blocks.append(_block("recent", [recent_line(m) for m in recent]))
    if relevant:
        ordered = sorted(relevant, key=lambda m: m.created_at)
        blocks.append(_block("relevant", [relevant_line(m, sessions) for m in ordered]))
    return "\n\n".join(blocks)


def _block(section: str, lines: list[str]) -> str:
    return _HEADINGS[section] + "\n" + "\n".join(lines)


def recent_line(message: Message) -> str:
    """A recent message's line: ``[role] content``."""
    return f"[{message.role.value}] {message.content}"


def relevant_line(message: Message, sessions: bool = False) -> str:
    """A search hit's line: its time (and session), role, content and score."""
    where = message.created_at.strftime("%Y-%m-%d %H:%M")
    if sessions and message.session_id is not None:
        where += f", session {message.session_id}"
    score = "" if message.score is None else f" (score {message.score:.2f})"
    return f"[{where}] [{message.role.value}] {message.content}{score}"


def fit_context(
    recent: Sequence[Message],
    relevant: Sequence[Message],
    max_chars: int,
    *,
    sessions: bool = False,
) -> tuple[list[Message], list[Message]]:
    """What of ``recent`` (oldest first) and ``relevant`` (best first) fits in
    ``max_chars`` characters of :func:`format_context` text: the newest recent message
    and the best hit first, then one of each in turn, each kind stopping at its first
    message that does not fit (so the recent part stays the newest ones, the relevant
    part the best ones; a message is never cut)."""
    kept: dict[str, list[Message]] = {"recent": [], "relevant": []}
    queues = {"recent": list(reversed(recent)), "relevant": list(relevant)}
    used = 0
    while queues["recent"] or queues["relevant"]:
        for kind, queue in queues.items():
            if not queue:
                continue
            # a section's first line brings its heading and the blank line before it
            line = recent_line(queue[0]) if kind == "recent" else relevant_line(queue[0], sessions)
            cost = len(line) + 1
            if not kept[kind]:
                cost += len(_HEADINGS[kind]) + 2
            if used + cost > max_chars:
                queue.clear()
                continue
            used += cost
            kept[kind].append(queue.pop(0))
    return kept["recent"][::-1], kept["relevant"]


def fit_notes(
    reflections: Sequence[str], observations: Sequence[str], max_chars: int
) -> tuple[list[str], list[str]]:
    """The reflections, then the observations, that fit in ``max_chars`` characters of
    :func:`format_context` text, each kind stopping at its first line that does not."""
    used = 0
    kept: list[list[str]] = []
    for section, notes in (("reflections", reflections), ("observations", observations)):
        taken: list[str] = []
        for note in notes:
            cost = len(note) + 3 + (len(_HEADINGS[section]) + 2 if not taken else 0)
            if used + cost > max_chars:
                break
            used += cost
            taken.append(note)
        kept.append(taken)
    return kept[0], kept[1]
