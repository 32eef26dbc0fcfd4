"""Multi-session conversations with labelled evidence, for ``python -m bench.retrieval``.

:func:`generate` makes, from a seed, one history per persona: sessions of user and
assistant turns, most of them everyday chat (recipes, weather, plans, work, other
people's pets and towns: words the questions share), and among them the persona's facts.
A fact is said once in some session, in one of several wordings; some facts change in a
later session (a move, a new job), and the persona refers back to a few of them. Each
question asks about one fact in wording of its own (paraphrased: "What is my dog
called?" for "we named the puppy Biscuit"), and names its evidence: the turns that
answer it (for a changed fact, the change; for "before" questions, the first statement
and the change). Everything is plain text, deterministic for a seed, with no model.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Question:
    """A question, its kind (``fact``, ``changed``, ``before``, ``referred``) and its
    evidence: ``(session, turn)`` positions in the persona's history."""

    text: str
    kind: str
    evidence: tuple[tuple[int, int], ...]
    overlap: bool = False
    """Whether the question shares a content word (not one of :data:`COMMON`) with an
    evidence turn: lexical search can find those; the others need meaning."""


@dataclass
class Persona:
    """One user's sessions (each a list of ``(role, content)`` turns) and questions."""

    name: str
    sessions: list[list[tuple[str, str]]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


@dataclass(frozen=True)
class Slot:
    """A kind of fact: its values, how a user says it, how a question asks it, and (for
    facts that change) how the change is said and how "before" is asked."""

    values: tuple[str, ...]
    says: tuple[str, ...]
    asks: tuple[str, ...]
    changes: tuple[str, ...] = ()
    asks_before: tuple[str, ...] = ()


SLOTS: dict[str, Slot] = {
    "pet": Slot(
        ("Biscuit", "Pepper", "Mochi", "Rocket", "Juniper", "Waffles", "Clementine", "Otis"),
        (
            "By the way, our puppy is called {v}.",
            "We adopted a dog last spring and named him {v}.",
            "{v} chewed through another shoe this morning, silly dog.",
        ),
        (
            "What is my dog called?",
            "What's the name of my dog?",
            "What did we name our puppy?",
            "What is our puppy called again?",
            "Which dog did we adopt last spring?",
        ),
    ),
    "city": Slot(
        ("Lisbon", "Porto", "Leeds", "Ghent", "Bologna", "Tartu", "Aarhus", "Valencia"),
        (
            "I live in {v} these days.",
            "Our flat in {v} is right by the old market.",
            "Home for me is {v}, has been for years.",
        ),
        (
            "Which city do I live in?",
            "Where is my home now?",
            "What town am I living in?",
            "Where do I live these days?",
            "Which city is our flat in?",
        ),
        (
            "Big news: we moved from {old} to {v} last month.",
            "We left {old} and settled in {v} in the end.",
        ),
        ("Where did I live before I moved?", "Which city did we leave when we moved?"),
    ),
    "job": Slot(
        ("nurse", "architect", "data analyst", "carpenter", "pilot", "translator", "baker"),
        (
            "I work as a {v} at a small firm.",
            "Being a {v} keeps me busy most weeks.",
            "My shift as a {v} ran late again.",
        ),
        (
            "What do I do for a living?",
            "What is my profession?",
            "What's my job?",
            "What do I work as?",
            "Which shift job keeps me busy?",
        ),
        (
            "I quit being a {old} and started as a {v} on Monday.",
            "Career change: no longer a {old}, I'm a {v} now.",
        ),
        ("What was my job before the change?", "What did I work as before?"),
    ),
    "food": Slot(
        ("ramen", "paella", "lasagna", "pho", "moussaka", "bibimbap", "risotto"),
        (
            "My favourite dish is {v}, no contest.",
            "I could eat {v} every single day.",
            "Nothing beats a bowl of {v} after work.",
        ),
        (
            "What food do I like best?",
            "What is my favourite meal?",
            "Which dish do I love?",
            "What is my favourite dish?",
            "What could I eat every day?",
        ),
    ),
    "sister": Slot(
        ("Ines", "Marta", "Freya", "Keiko", "Amara", "Lotte", "Noor"),
        (
            "My sister {v} is visiting next week.",
            "{v}, my younger sister, just got engaged.",
            "I had lunch with my sister {v} today.",
        ),
        (
            "What is my sister's name?",
            "Who is my sister?",
            "What's my sibling called?",
            "Which sister is visiting next week?",
            "Who did I have lunch with, my sister?",
        ),
    ),
    "car": Slot(
        ("Volvo estate", "Fiat Panda", "Skoda Octavia", "Renault Zoe", "Mazda roadster"),
        (
            "I drive an old {v}.",
            "The {v} needs new tyres before winter.",
            "We took my {v} to the coast.",
        ),
        (
            "What car do I drive?",
            "Which car do I have?",
            "What vehicle do I own?",
            "What do I drive?",
            "Which car needs new tyres?",
        ),
    ),
    "hobby": Slot(
        ("bouldering", "sailing", "birdwatching", "pottery", "chess", "trail running"),
        (
            "On weekends I go {v}.",
            "I've been really into {v} lately.",
            "Spent all Saturday {v} with friends.",
        ),
        (
            "What do I do on weekends?",
            "What is my hobby?",
            "How do I spend my free time?",
            "What have I been into lately?",
            "Where do I go on weekends?",
        ),
    ),
    "allergy": Slot(
        ("peanuts", "shellfish", "pollen", "cats", "penicillin", "sesame"),
        (
            "Careful with recipes: I'm allergic to {v}.",
            "I react badly to {v}, it's an allergy.",
            "Doctor confirmed my allergy to {v}.",
        ),
        (
            "What am I allergic to?",
            "Which allergy do I have?",
            "What should I avoid eating?",
            "What allergy did the doctor confirm?",
            "What do I react badly to?",
        ),
    ),
}

# Everyday chat: each line a template and the ways it is filled, so that a history of
# hundreds of turns says each distinct line about once or twice (20 fixed lines made each
# appear a dozen times, and one line outranking the evidence then took every top slot).
FILLER_USER: tuple[tuple[Any, ...], ...] = (
    (
        "Can you suggest a quick recipe for {} tonight?",
        ("dinner", "a light lunch", "two people", "a picnic", "something with lentils"),
    ),
    (
        "What's a good way to start {} again?",
        ("running", "swimming", "cycling to work", "stretching", "reading before bed"),
    ),
    (
        "The weather looks {}, any ideas for an indoor afternoon?",
        ("grim", "stormy", "cold and wet", "foggy", "awful"),
    ),
    (
        "My friend's {} keeps barking at the postman.",
        ("dog", "terrier", "old spaniel", "puppy", "collie"),
    ),
    (
        "I read an article about {}.",
        (
            "cities with the best public transport",
            "the history of tea",
            "sleep and memory",
            "electric bikes",
            "urban gardens",
        ),
    ),
    (
        "Remind me to call the {} about {}.",
        ("bank", "dentist", "landlord", "insurer", "plumber"),
        ("my card", "the bill", "next week", "the appointment", "the leak"),
    ),
    (
        "What should I pack for {}?",
        (
            "a weekend by the sea",
            "a week of hiking",
            "a business trip",
            "a wedding abroad",
            "a long train ride",
        ),
    ),
    (
        "How do I keep {} alive on a windowsill?",
        ("basil", "mint", "a small orchid", "chillies", "a lemon tree"),
    ),
    (
        "Work was long today, {}.",
        (
            "the meeting ran over",
            "the printer broke again",
            "two people were off sick",
            "the client called twice",
            "the deadline moved",
        ),
    ),
    (
        "My neighbour just bought a new {}, a loud one.",
        ("car", "lawnmower", "motorbike", "sound system", "parrot"),
    ),
    (
        "Any tips for {}?",
        ("sleeping better", "saving money", "a tidy desk", "meal planning", "a calmer morning"),
    ),
    (
        "I'm thinking about learning {} this year.",
        ("a language", "the guitar", "to sew", "to code", "to bake bread"),
    ),
    (
        "Which {} are good for a rainy evening?",
        ("films", "board games", "books", "podcasts", "soups"),
    ),
    (
        "A colleague's {} is a {} in the next town.",
        ("sister", "brother", "cousin", "husband", "friend"),
        ("nurse", "teacher", "baker", "lawyer", "vet"),
    ),
    (
        "We are planning a dinner for {} people on {}.",
        ("four", "six", "eight", "ten"),
        ("Friday", "Saturday", "Sunday"),
    ),
    (
        "What's the best way to clean a {}?",
        ("cast iron pan", "kettle", "wool jumper", "bike chain", "shower screen"),
    ),
    (
        "The {} next door sits in our garden all day.",
        ("cat", "ginger cat", "tortoise", "old tomcat"),
    ),
    (
        "I need a present idea for my {}'s birthday.",
        ("uncle", "niece", "godson", "grandmother", "boss"),
    ),
    ("How long should I boil {}?", ("an egg for a soft yolk", "rice", "pasta", "potatoes")),
    (
        "Traffic {} was terrible this morning.",
        ("in town", "on the ring road", "by the school", "near the bridge"),
    ),
)
FILLER_ASSISTANT: tuple[tuple[Any, ...], ...] = (
    ("{} Start with what you already have.", ("Happy to help with that.", "Sure.")),
    ("{} Here is one idea you could try.", ("Good question.", "Alright.")),
    ("That sounds like a good plan{}", (".", ", honestly.", " to me.")),
    ("{} a few things matter here.", ("Good question,", "It depends,", "Well,")),
    ("Noted. {}", ("Anything else on your mind?", "What else can I do?")),
    ("Sure, let me walk you through it{}", (".", " step by step.", " quickly.")),
    ("I would start {} and build from there.", ("small", "slowly", "with one thing")),
)
ACKS = ("Thanks for telling me.", "Got it, I'll remember that.", "Noted!", "Good to know.")


COMMON = frozenset(
    "a about again am an and are as at be by can could did do does for from have how i "
    "i'm in is it its me my of on or our s so that the their to was we what when where "
    "which who why will with would you your".split()
)


def content_words(text: str) -> set[str]:
    """The lower-cased words of ``text`` outside :data:`COMMON`."""
    return {w for w in re.findall(r"\w+", text.casefold()) if w not in COMMON}


def generate(
    personas: int = 10, sessions: int = 20, turns: int = 12, seed: int = 7
) -> list[Persona]:
    """``personas`` histories of ``sessions`` sessions of ``turns`` user/assistant pairs."""
    rng = random.Random(seed)
    return [_persona(rng, f"persona-{p}", sessions, turns) for p in range(personas)]


class _Spots:
    """The user turns not yet holding a fact, in a random order."""

    def __init__(self, rng: random.Random, sessions: int, turns: int) -> None:
        self.free = [(s, 2 * t) for s in range(sessions) for t in range(turns)]
        rng.shuffle(self.free)

    def take(self, after: int = -1, before: int | None = None) -> tuple[int, int]:
        """A free user turn in a session after ``after`` (and before ``before``)."""
        for spot in self.free:
            if spot[0] > after and (before is None or spot[0] < before):
                self.free.remove(spot)
                return spot
        raise ValueError("no free turn left there: more sessions or turns")


def _persona(rng: random.Random, name: str, sessions: int, turns: int) -> Persona:
    persona = Persona(name)
    persona.sessions = [
        [t for _ in range(turns) for t in _filler_pair(rng)] for _ in range(sessions)
    ]
    spots = _Spots(rng, sessions, turns)
    for slot_name in rng.sample(sorted(SLOTS), k=min(6, len(SLOTS))):
        _fact(rng, persona, SLOTS[slot_name], spots, max(1, sessions // 2))
    persona.questions = [_with_overlap(persona, q) for q in persona.questions]
    return persona


def _with_overlap(persona: Persona, question: Question) -> Question:
    asked = content_words(question.text)
    shared = any(asked & content_words(persona.sessions[s][t][1]) for s, t in question.evidence)
    return Question(question.text, question.kind, question.evidence, shared)


def _fact(rng: random.Random, persona: Persona, slot: Slot, spots: _Spots, half: int) -> None:
    """Say one fact (a fact that may change: in the first ``half`` of the sessions; maybe
    changed later) and ask about it."""
    value, other = rng.sample(slot.values, 2)
    first = spots.take(before=half) if slot.changes else spots.take()
    _say(rng, persona, first, rng.choice(slot.says).format(v=value))
    if slot.changes and rng.random() < 0.7:
        change = spots.take(after=first[0])
        _say(rng, persona, change, rng.choice(slot.changes).format(old=value, v=other))
        persona.questions.append(Question(rng.choice(slot.asks), "changed", (change,)))
        before = rng.choice(slot.asks_before)
        persona.questions.append(Question(before, "before", (first, change)))
        return
    asked = rng.choice(slot.asks)
    persona.questions.append(Question(asked, "fact", (first,)))
    if rng.random() < 0.3 and first[0] < len(persona.sessions) - 1:
        later = spots.take(after=first[0])
        _say(rng, persona, later, f"Like I said before, {value} still matters a lot to me.")
        again = rng.choice([a for a in slot.asks if a != asked])
        persona.questions.append(Question(again, "referred", (first, later)))


def _say(rng: random.Random, persona: Persona, at: tuple[int, int], text: str) -> None:
    session, turn = at
    persona.sessions[session][turn] = ("user", text)
    persona.sessions[session][turn + 1] = ("assistant", rng.choice(ACKS))


def filled(
    template: tuple[str, tuple[str, ...]] | tuple[str, tuple[str, ...], tuple[str, ...]],
    rng: random.Random,
) -> str:
    """One line of an everyday-chat template, each blank filled at random."""
    text, *fills = template
    return text.format(*(rng.choice(options) for options in fills))


def filler_lines() -> set[str]:
    """Every everyday-chat line the generator can write (user and assistant)."""
    lines: set[str] = set()
    for text, *fills in (*FILLER_USER, *FILLER_ASSISTANT):
        combos: list[tuple[str, ...]] = [()]
        for options in fills:
            combos = [(*combo, option) for combo in combos for option in options]
        lines.update(text.format(*combo) for combo in combos)
    return lines


def _filler_pair(rng: random.Random) -> list[tuple[str, str]]:
    return [
        ("user", filled(rng.choice(FILLER_USER), rng)),
        ("assistant", filled(rng.choice(FILLER_ASSISTANT), rng)),
    ]
