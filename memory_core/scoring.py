"""One text-relevance scale for every backend, so ``threshold`` means the same everywhere.

The score of a text hit is a pure function of the query and the message content,
computed here, in Python, the same way by every backend::

    score = coverage * (0.5 + 0.5 * s / (1 + s))

``coverage`` is the share of the query's distinct words that occur as words of the
message, each word weighing 1 except the common English function words of
:data:`FUNCTION_WORDS` ("what", "is", "my", ...), which weigh :data:`FUNCTION_WEIGHT`; and
``s`` a BM25-like term strength of the message alone: for each query word it contains
``tf`` times, its weight times ``tf * (K1 + 1) / (tf + K1 * (1 - B + B * words / AVERAGE_WORDS))``,
summed, where ``words`` is the message's word count. There is no IDF and the average
length is a constant, so nothing about the rest of the store enters the score; the fixed
function-word weights stand in for IDF where it matters most ("What is my sister's
name?" is about "sister" and "name", not "what", "is" and "my").

A word is a run of Unicode word characters (``\\w+``), compared after ``casefold()``, once
the English clitics ``'s``, ``'t``, ``'d``, ``'ll``, ``'re``, ``'ve`` and ``'m`` after a word
are dropped ("sister's" is the word "sister", "don't" the word "don"; a straight or a
curly apostrophe). A message containing every query word scores at least 0.5 (at most
about 0.84 for a one-word query, 0.90 for two words, closer to 1 with more); one with
half of the query's weight 0.25 to 0.5; one with none of its words scores 0 and is not a
text hit.

Why not the engine's own rank (SQLite's bm25, Lucene's score): it depends on everything in
the index — the number of messages, their average length, how many contain each word —
so the same message scored differently on each backend (0.5 on ``memory://``, 0.69 on
Neo4j for one five-message corpus) and, on a store others write to, between two calls
(a score reused as ``threshold`` could drop its own hit). The engine only selects
candidates: the embedded and Bolt backends take the best :func:`candidate_pool` matches in
scope by the engine's own rank (metadata filters applied), score them here, and return them
best first (equal scores: the message written last first, on every backend),
``threshold`` and ``limit`` applied after scoring. When a scope holds more
matches than the pool, a message the engine ranked below the pool is not considered. The
NAMS adapter scores the service's text hits here too (the service returns its best
``limit``; the NAMS-compatible server of this package picks them by the rule above).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .models import Message

_WORD = re.compile(r"\w+", re.UNICODE)
_CLITIC = re.compile(r"(?<=\w)['\u2019](?:s|t|d|ll|re|ve|m)\b")

K1 = 1.2
"""How fast repeating a word stops adding strength (BM25's ``k1``)."""
B = 0.75
"""How much a long message is penalised for its length (BM25's ``b``)."""
AVERAGE_WORDS = 20
"""The message length (in words) that counts as ordinary: a fixed constant, not a
statistic of the store, so a score never depends on other messages."""
FUNCTION_WEIGHT = 0.2
"""The weight of a function word of the query (any other word weighs 1)."""
FUNCTION_WORDS = frozenset(
    "a an the this that these those some any all each every no not "
    "i me my mine myself you your yours we us our ours he him his she her hers it its "
    "they them their theirs "
    "what which who whom whose where when why how "
    "am is are was were be been being do does did done have has had having "
    "will would shall should can could may might must "
    "to of in on at by for from with about as into onto over under "
    "and or but if then than so too very just also there here".split()
)
"""English words that say little about what a message is about: a query's function
words weigh :data:`FUNCTION_WEIGHT` in the score (words of other languages weigh 1)."""
CANDIDATES = 200
"""How many matches of the engine, by its own rank, a text search scores at least."""
TOLERANCE = 1e-9
"""How far two backends' scores of one message may differ (float rounding only)."""


def words_of(text: str) -> list[str]:
    """The words of ``text`` as the score sees them: case-folded, clitics dropped (see
    the module docstring), in order, repeats kept."""
    folded = text.casefold()
    if "'" in folded or "\u2019" in folded:
        folded = _CLITIC.sub("", folded)
    return _WORD.findall(folded)


def query_terms(text: str) -> list[str]:
    """The distinct words of ``text`` (:func:`words_of`), in order (linear: a dict keeps
    the first occurrence of each word; a list lookup made long queries quadratic)."""
    return list(dict.fromkeys(words_of(text)))


def engine_terms(text: str) -> list[str]:
    """What a full-text engine is asked for to find the candidates of ``text``: each
    distinct whitespace-separated term holding a word character, followed, when the
    term is not a single word, by its words (:func:`words_of`) not asked for yet. The
    engine's tokenizer splits a term its own way ("sister's" is one word to Lucene,
    "sister" and "s" to FTS5); its words make sure every message holding a word the
    score counts can be a candidate."""
    asked: dict[str, None] = {}
    seen: set[str] = set()
    for term in dict.fromkeys(text.split()):
        if not _WORD.search(term):
            continue
        words = words_of(term)
        asked[term] = None
        seen.add(term.casefold())
        if words != [term.casefold()]:
            for word in words:
                if word not in seen:
                    seen.add(word)
                    asked[word] = None
    return list(asked)


def text_score(terms: list[str], content: str) -> float:
    """The 0..1 score of ``content`` for the query words ``terms`` (see the module
    docstring); 0.0 when it contains none of them."""
    if not terms:
        return 0.0
    words = words_of(content)
    if not words:
        return 0.0
    wanted = dict.fromkeys(terms, 0)
    for word in words:
        if word in wanted:
            wanted[word] += 1
    norm = K1 * (1.0 - B + B * len(words) / AVERAGE_WORDS)
    found = 0.0
    total = 0.0
    strength = 0.0
    for term, count in wanted.items():
        weight = FUNCTION_WEIGHT if term in FUNCTION_WORDS else 1.0
        total += weight
        if count:
            found += weight
            strength += weight * count * (K1 + 1.0) / (count + norm)
    if not found:
        return 0.0
    return found / total * (0.5 + 0.5 * strength / (1.0 + strength))


def candidate_pool(limit: int) -> int:
    """How many of the engine's best matches a search returning ``limit`` hits scores."""
    return max(limit, CANDIDATES)


GROUP_POOL = 5
"""``search_messages(per_session=...)`` groups the best ``limit`` times this many hits."""


def group_pool(limit: int, cap: int | None) -> int:
    """How many hits a search grouped by session asks the store for (at most ``cap``, the
    backend's ``max_search_hits``, when it has one)."""
    wanted = limit * GROUP_POOL
    return wanted if cap is None else max(limit, min(wanted, cap))


def by_session(hits: Sequence[Message], per_session: int, limit: int) -> list[Message]:
    """``hits`` (best first) grouped by session: the best ``per_session`` of each session,
    sessions in the order of their best hit, then the first ``limit`` of them. With
    ``per_session=1``: the best hit of each of the ``limit`` best sessions."""
    groups: dict[object, list[Message]] = {}
    for hit in hits:
        group = groups.setdefault(hit.session_id or hit.conversation_id, [])
        if len(group) < per_session:
            group.append(hit)
    return [hit for group in groups.values() for hit in group][:limit]


def by_recency(hits: Sequence[Message], half_life: timedelta, now: datetime) -> list[Message]:
    """``hits`` with each score halved for every ``half_life`` of its age (``now`` minus
    its ``created_at``; a time after ``now`` counts as no age), best first; equal
    weighted scores keep their order in ``hits``. The hits are copies: the scores of
    ``hits`` stay as they were."""
    weighed = []
    for hit in hits:
        age = max((now - hit.created_at) / half_life, 0.0)
        score = (hit.score or 0.0) * 0.5**age
        weighed.append(hit.model_copy(update={"score": score}))
    return sorted(weighed, key=lambda hit: -(hit.score or 0.0))


def relevant_pool(
    wanted: int, per_session: int | None, cap: int | None, half_life: timedelta | None = None
) -> int:
    """How many hits ``get_context`` asks a search for to keep ``wanted`` (its ``max_hits``
    plus the recent messages it may meet): ``wanted`` itself, or, grouped by session or
    weighed by recency, :func:`group_pool` of it; never more than ``cap`` (the store's
    ``max_search_hits``)."""
    wide = per_session is not None or half_life is not None
    asked = group_pool(wanted, cap) if wide else wanted
    return asked if cap is None else min(asked, cap)


def relevant_hits(
    hits: Sequence[Message],
    seen: AbstractSet[object],
    per_session: int | None,
    limit: int,
    half_life: timedelta | None = None,
) -> list[Message]:
    """``get_context``'s relevant messages: ``hits`` (best first) not in ``seen`` (the
    recent messages), weighed by recency when ``half_life`` is set (:func:`by_recency`,
    from now), grouped by session when ``per_session`` is set (:func:`by_session`), then
    the first ``limit``."""
    fresh = [hit for hit in hits if hit.id not in seen]
    if half_life is not None:
        fresh = by_recency(fresh, half_life, datetime.now(UTC))
    return fresh[:limit] if per_session is None else by_session(fresh, per_session, limit)
