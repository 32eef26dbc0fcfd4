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


def format_context(
    recent: Sequence[Message],
    relevant: Sequence[Message],
    observations: Sequence[str] = (),
    reflections: Sequence[str] = (),
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
        [<role>] <content> (score 0.83)
    """
    blocks: list[str] = []
    if reflections:
        blocks.append("## Reflections\n" + "\n".join(f"- {r}" for r in reflections))
    if observations:
        blocks.append("## Observations\n" + "\n".join(f"- {o}" for o in observations))
    if recent:
        blocks.append(
            "## Recent messages\n" + "\n".join(f"[{m.role.value}] {m.content}" for m in recent)
        )
    if relevant:
        lines = [
            f"[{m.role.value}] {m.content}"
            + (f" (score {m.score:.2f})" if m.score is not None else "")
            for m in relevant
        ]
        blocks.append("## Relevant messages\n" + "\n".join(lines))
    return "\n\n".join(blocks)
