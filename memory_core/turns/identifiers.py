"""Bounded identifier extraction from a user message, and which entities a reply cites."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..models import Entity
from ..validation import check_int, check_str

MAX_IDENTIFIERS = 16
MAX_IDENTIFIER_LENGTH = 120

# ---------------------------------------------------------------- identifier extraction

# "…", \u201c…\u201d (curly), \u2018…\u2019 (curly), `…` and '…' (not an apostrophe).
_QUOTED = re.compile(
    r'"([^"\n]+)"|\u201c([^\u201d\n]+)\u201d|\u2018([^\u2019\n]+)\u2019|`([^`\n]+)`'
    r"|(?<!\w)'([^'\n]+)'(?!\w)"
)
_UUID = re.compile(
    r"(?<![0-9A-Fa-f-])[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-"
    r"[0-9A-Fa-f]{12}(?![0-9A-Fa-f-])"
)
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_HASH_ID = re.compile(r"(?<![\w&#])#\d+(?!\w)")
# Codes such as ORD-1234, user_42, COVID-19 (separated) or SKU42, B2B (upper case).
_CODE = re.compile(
    r"(?<![\w@#.-])(?:[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+|[A-Z][A-Z0-9]*\d[A-Z0-9]*)"
    r"(?![\w-])"
)
_WORD = re.compile(r"[^\W\d_][\w'\u2019&.-]*")
_TRAILING = re.compile(r"(?:['\u2019]s)?[.'\u2019&-]*$")
_INITIALS = re.compile(r"(?:[A-Za-z]\.)+")
_TITLES = frozenset({"mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof"})

# Lower-case words that may join capitalized words into one name ("Bank of America").
_CONNECTORS = frozenset({"of", "de", "du", "da", "del", "der", "van", "von", "la", "le"})
# Capitalized words that start sentences rather than name things.
_STOPWORDS = frozenset(
    """
    a an the this that these those i i'm i'd i'll i've me my mine we our ours you your
    yours he him his she her hers it its they them their there here what which who whom
    whose when where why how is are was were be been do does did done can could would
    should will shall may might must have has had please hello hi hey thanks thank yes
    no ok okay sure also and but or so if then than tell show give find get let let's
    look check list today tomorrow yesterday now just maybe well oh dear good morning
    afternoon evening night any some all not don't can't won't every each after first
    next finally however actually honestly ask send write call email remind book compare
    describe explain summarize summarise update create add remove delete cancel open close
    what's who's where's how's that's it's there's
    before since while because about again still yet ah hmm great nice cool fine
    """.split()
)


@dataclass(frozen=True)
class _Found:
    start: int
    text: str


def extract_identifiers(text: str, max_identifiers: int = MAX_IDENTIFIERS) -> list[str]:
    """Concrete identifiers in ``text``, in order of appearance.

    Finds quoted strings, UUIDs, e-mail addresses, ``#123`` references, codes such as
    ``ORD-1234`` and capitalized phrases such as ``Acme Corp`` or ``Bank of America``
    (a leading sentence word such as "Hello" or "Tell" is dropped). Deduplicated ignoring
    case, at most ``max_identifiers``. A heuristic: it never raises on any text.
    """
    check_str(text, "text")
    bound = check_int(max_identifiers, "max_identifiers", minimum=1)
    found: list[_Found] = []
    masked: list[tuple[int, int]] = []
    for match in _QUOTED.finditer(text):
        group = next(i for i in range(1, 6) if match.group(i) is not None)
        found.append(_Found(match.start(group), match.group(group).strip()))
    for pattern in (_UUID, _EMAIL, _HASH_ID, _CODE):
        for match in pattern.finditer(text):
            if _overlaps(match.span(), masked):
                continue
            if pattern is _CODE and not any(c.isdigit() for c in match.group()):
                continue
            masked.append(match.span())
            found.append(_Found(match.start(), match.group()))
    found.extend(_capitalized_phrases(text, masked))
    found.sort(key=lambda f: f.start)
    return _bounded_unique(found, bound)


def _overlaps(span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    return any(span[0] < end and start < span[1] for start, end in spans)


def _capitalized_phrases(text: str, masked: list[tuple[int, int]]) -> list[_Found]:
    phrases: list[_Found] = []
    current: list[re.Match[str]] = []
    pending: list[re.Match[str]] = []  # connectors kept only if a capitalized word follows

    def flush() -> None:
        words = list(current)
        while words and (_is_stopword(words[0].group()) or words[0].group() in _CONNECTORS):
            words.pop(0)
        if words:
            phrase = _TRAILING.sub("", text[words[0].start() : words[-1].end()])
            phrases.append(_Found(words[0].start(), phrase))
        current.clear()
        pending.clear()

    for word in _WORD.finditer(text):
        if _overlaps(word.span(), masked):
            flush()
            continue
        last = (pending or current)[-1] if (pending or current) else None
        joined = (
            last is not None
            and text[last.end() : word.start()] in (" ", " & ")
            and not _ends_sentence(last.group())
        )
        if word.group()[0].isupper():
            if not joined:
                flush()
            current.extend(pending)
            pending.clear()
            current.append(word)
        elif joined and current and word.group() in _CONNECTORS:
            pending.append(word)
        else:
            flush()
    flush()
    return phrases


def _is_stopword(word: str) -> bool:
    return word.casefold().replace("\u2019", "'").rstrip(".") in _STOPWORDS


def _ends_sentence(word: str) -> bool:
    if not word.endswith("."):
        return False
    return word.rstrip(".").casefold() not in _TITLES and not _INITIALS.fullmatch(word)


def _bounded_unique(found: list[_Found], bound: int) -> list[str]:
    seen: set[str] = set()
    result: list[str] = []
    for item in found:
        text = item.text
        key = text.casefold()
        if len(text) < 2 or len(text) > MAX_IDENTIFIER_LENGTH or key in seen:
            continue
        if _is_stopword(text):
            continue
        seen.add(key)
        result.append(text)
        if len(result) == bound:
            break
    return result


def cited_entities(entities: Iterable[Entity], text: str) -> list[Entity]:
    """The entities whose name (or id) appears in ``text`` as a whole word, ignoring case."""
    folded = text.casefold()
    cited: list[Entity] = []
    for entity in entities:
        for needle in (entity.name, entity.id):
            pattern = r"(?<!\w)" + re.escape(needle.casefold()) + r"(?!\w)"
            if needle.strip() and re.search(pattern, folded):
                cited.append(entity)
                break
    return cited
