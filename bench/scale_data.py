"""The scale bench's data: sessions of skewed length, owned by users of skewed size.

Everything is drawn from one seeded generator, so every run (and every backend) sees the
same store. Session lengths follow a lognormal (most sessions short, a few long); sessions
go to users by a Zipf law (user 0 holds about a fifth of them), so the busiest user has
enough conversations for ``list_conversations`` page 50 from the 10k step on.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

USERS = 100
MAX_SESSIONS = 10_000
SEED = 31
WORDS = (
    "alpha amber anchor apple arrow autumn basin beacon bridge cable canyon carbon cedar "
    "cipher cobalt comet copper coral delta desert ember falcon fern harbor helix island "
    "jasper kernel lagoon lantern maple marble meadow meteor nickel oasis orbit pepper "
    "piston planet prism quartz radar raven ribbon river saddle signal silver socket "
    "spiral summit tango thunder timber tulip velvet violet walnut willow zephyr zinc"
).split()
ENTITY = "Acme"


def parse_count(text: str) -> int:
    """``"10k"`` → 10,000, ``"1m"`` → 1,000,000, ``"500"`` → 500."""
    text = text.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    number = text[:-1] if scale > 1 else text
    value = int(float(number) * scale)
    if value <= 0:
        raise ValueError(f"a step must be a positive count, got {text!r}")
    return value


def sessions_for(messages: int) -> int:
    """How many sessions a store of ``messages`` messages spreads them over."""
    return max(1, min(MAX_SESSIONS, messages // 10))


def user_name(index: int) -> str:
    return f"u{index:03d}"


@dataclass
class Plan:
    """Which user owns each session, each session's weight, and how long every session is
    in the store so far (``lengths``)."""

    tag: str
    owners: list[int] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        rng = random.Random(SEED)
        zipf = [1 / (k + 1) for k in range(USERS)]
        self.owners = rng.choices(range(USERS), weights=zipf, k=MAX_SESSIONS)
        self.weights = [rng.lognormvariate(0.0, 1.5) for _ in range(MAX_SESSIONS)]

    def session(self, index: int) -> str:
        """The name of session ``index``."""
        return f"{self.tag}-s{index:05d}"

    def user(self, index: int) -> str:
        """The user owning session ``index``."""
        return user_name(self.owners[index])

    @property
    def messages(self) -> int:
        """Messages the plan has stored so far."""
        return sum(self.lengths)

    @property
    def users(self) -> list[str]:
        """The users owning at least one session so far."""
        return [user_name(u) for u in sorted(set(self.owners[: len(self.lengths)]))]

    @property
    def top_user(self) -> str:
        """The user with the most sessions (for the deep ``list_conversations`` page)."""
        live = self.owners[: len(self.lengths)]
        return user_name(max(set(live), key=live.count))

    def grow(self, messages: int) -> list[tuple[int, int]]:
        """Grow the plan to about ``messages`` messages: ``(session index, how many to
        add)`` for every session that grows (no session ever shrinks)."""
        count = sessions_for(messages)
        total = sum(self.weights[:count])
        target = [max(1, int(messages * w / total)) for w in self.weights[:count]]
        self.lengths += [0] * (count - len(self.lengths))
        growth = [(i, target[i] - self.lengths[i]) for i in range(count)]
        growth = [(i, n) for i, n in growth if n > 0]
        for i, n in growth:
            self.lengths[i] += n
        return growth


def rows(session: int, start: int, count: int) -> list[dict[str, Any]]:
    """Messages ``start`` … ``start + count - 1`` of session ``session``: three words of
    :data:`WORDS` each (a word matches about one message in twenty) and an entity name."""
    out = []
    for seq in range(start, start + count):
        k = session * 7919 + seq * 104729
        words = " ".join(WORDS[(k >> shift) % len(WORDS)] for shift in (0, 5, 11))
        out.append(
            {
                "role": "assistant" if seq % 2 else "user",
                "content": f"{words} about {ENTITY} {k % 50} at step {seq}",
            }
        )
    return out
