"""``python -m bench --scale``: grow each store in steps and measure at every step, then
run concurrent agents against it; writes ``bench/results/scale.json`` and ``.md`` and
the PNG plots (see :mod:`bench.plots`).

At each step the store is grown to the step's size by batches (one
``bulk_add_messages`` per growing session; the time is kept as the load rate, which
predicts how long a bigger step takes), then measured: ingest (single adds, batches),
newest-100 in a random session, search in one session, search across one user's
sessions, ``find_entities``, ``list_conversations_page`` pages 1 and 50 of the user with
the most sessions, one agent turn (the turn protocol), size on disk, the client's peak
RSS. Latencies are p50 / p95 / p99 over ``samples`` calls, each on a session (and user)
drawn by a seeded generator, so every backend gets the same calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .core import percentile
from .scale_data import ENTITY, SEED, WORDS, Plan, rows

DEEP_PAGE = 50
LOADERS = 8  # sessions loaded at once while a store grows
# the subject operation each measurement needs, where the names differ
NEEDS = {
    "ingest_single": "add_one",
    "ingest_batch": "add_batch",
    "newest_100": "newest",
    "list_pages": "list_page",
}


@dataclass(frozen=True)
class ScaleSizes:
    """How much each step and the concurrency runs do (``--smoke``: tiny)."""

    samples: int = 100  # latency samples per operation per step
    singles: int = 200  # single adds per step (ingest)
    batches: int = 20  # batches per step (ingest)
    batch_size: int = 100
    turns: int = 20  # agent turns per step
    total_turns: int = 128  # concurrency: turns over all agents at least ...
    min_turns: int = 3  # ... and at least this many per agent
    processes: int = 4  # embedded: OS processes sharing the file store


DEFAULT = ScaleSizes()
SMOKE = ScaleSizes(
    samples=3, singles=3, batches=2, batch_size=5, turns=2, total_turns=2, min_turns=1
)


def latency(values: list[float]) -> dict[str, float]:
    """p50 / p95 / p99 of milliseconds, and how many calls they are over."""
    return {
        "p50_ms": percentile(values, 0.5),
        "p95_ms": percentile(values, 0.95),
        "p99_ms": percentile(values, 0.99),
        "calls": float(len(values)),
    }


async def _ms(call: Awaitable[Any]) -> float:
    start = time.perf_counter()
    await call
    return (time.perf_counter() - start) * 1000


def peak_rss_mb() -> float:
    """This process's peak resident set since :func:`reset_peak_rss` (Linux), in MiB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak_rss() -> None:
    """Start a new peak-RSS window (writing 5 to clear_refs resets VmHWM on Linux)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


async def grow(subject: Any, plan: Plan, growth: list[tuple[int, int]]) -> float:
    """Load the grown sessions into ``subject`` (``LOADERS`` sessions at a time, as a bulk
    load over a network would); the seconds it took."""
    work = iter(growth)

    async def loader() -> None:
        for index, count in work:
            begin = plan.lengths[index] - count
            await subject.load(plan.user(index), plan.session(index), rows(index, begin, count))

    start = time.perf_counter()
    await asyncio.gather(*(loader() for _ in range(LOADERS)))
    return time.perf_counter() - start


def warm_up(sizes: ScaleSizes, first: bool) -> ScaleSizes:
    """The unrecorded round before a step: 30 samples of each read before the first
    step, then a few of everything (every query runs at least once)."""
    if first:
        return replace(sizes, samples=min(sizes.samples, 30))
    return replace(
        sizes,
        samples=min(sizes.samples, 5),
        singles=min(sizes.singles, 5),
        batches=min(sizes.batches, 2),
        turns=min(sizes.turns, 3),
    )


def entities_per_user(messages: int) -> int:
    """Entities each user has in a store of ``messages`` messages (100 each at 1M)."""
    return max(2, messages // 10_000)


class Step:
    """The measurements of one subject at one step."""

    def __init__(self, subject: Any, plan: Plan, sizes: ScaleSizes, seed: int) -> None:
        self.subject = subject
        self.plan = plan
        self.sizes = sizes
        self.rng = random.Random(seed)

    def _pick(self) -> tuple[str, str]:
        index = self.rng.randrange(len(self.plan.lengths))
        return self.plan.user(index), self.plan.session(index)

    def _word(self) -> str:
        return self.rng.choice(WORDS)

    async def run(self) -> dict[str, Any]:
        s, result = self.subject, {}
        ops: dict[str, Callable[[], Awaitable[Any]]] = {
            "ingest_single": self._singles,
            "ingest_batch": self._batches,
            "newest_100": lambda: self._sampled(lambda u, x: s.newest(u, x)),
            "search_session": lambda: self._sampled(
                lambda u, x: s.search_session(u, x, self._word())
            ),
            "search_user": lambda: self._sampled(lambda u, x: s.search_user(u, self._word())),
            "find_entities": lambda: self._sampled(
                lambda u, x: s.find_entities(u, f"{ENTITY} {self.rng.randrange(2)}")
            ),
            "list_pages": self._list_pages,
            "turn": self._turns,
        }
        for name, op in ops.items():
            result[name] = await op() if NEEDS.get(name, name) in s.ops else None
        return result

    async def _sampled(self, call: Callable[[str, str], Awaitable[Any]]) -> dict[str, float]:
        spent = []
        for _ in range(self.sizes.samples):
            user, session = self._pick()
            spent.append(await _ms(call(user, session)))
        return latency(spent)

    async def _singles(self) -> dict[str, float]:
        spent = []
        for i in range(self.sizes.singles):
            user, session = self._pick()
            spent.append(await _ms(self.subject.add_one(user, session, f"single {i} meadow")))
        return {"msgs_per_s": len(spent) / sum(spent) * 1000, **latency(spent)}

    async def _batches(self) -> dict[str, float]:
        spent, size = [], self.sizes.batch_size
        for b in range(self.sizes.batches):
            user, session = self._pick()
            batch = rows(b, 1_000_000 + b * size, size)
            spent.append(await _ms(self.subject.add_batch(user, session, batch)))
        return {"msgs_per_s": size * len(spent) / sum(spent) * 1000, **latency(spent)}

    async def _list_pages(self) -> dict[str, float]:
        user = self.plan.top_user
        cursor, page = None, 1
        while page < DEEP_PAGE:
            following = await self.subject.list_page(user, cursor)
            if following is None:
                break
            cursor, page = following, page + 1
        first = [await _ms(self.subject.list_page(user, None)) for _ in range(self.sizes.samples)]
        deep = [await _ms(self.subject.list_page(user, cursor)) for _ in range(self.sizes.samples)]
        one, far = latency(first), latency(deep)
        return {
            "deep_page": float(page),
            **{f"page1_{k}": v for k, v in one.items() if k != "calls"},
            **{f"deep_{k}": v for k, v in far.items() if k != "calls"},
            "deep_to_page1_p95": far["p95_ms"] / one["p95_ms"],
        }

    async def _turns(self) -> dict[str, float]:
        spent = []
        for t in range(self.sizes.turns):
            user, session = self._pick()
            turn_id = f"scale-{self.plan.messages}-{t}-{self.rng.random()}"
            spent.append(await _ms(self.subject.turn(user, session, turn_id)))
        return latency(spent)


MEASUREMENTS = (
    "ingest_single",
    "ingest_batch",
    "newest_100",
    "search_session",
    "search_user",
    "find_entities",
    "list_pages",
    "turn",
)


async def steps(
    subjects: list[Any],
    plan: Plan,
    counts: list[int],
    sizes: ScaleSizes,
    log: Callable[[str], None],
) -> dict[str, list[dict[str, Any]]]:
    """Grow every subject through ``counts`` and measure each at every step."""
    found: dict[str, list[dict[str, Any]]] = {s.name: [] for s in subjects if s.measured}
    entities: dict[str, int] = {}  # entities each user has
    for count in counts:
        growth = plan.grow(count)
        per_user = entities_per_user(plan.messages)
        loaded = sum(n for _, n in growth)
        have = dict(entities)  # entities per user before this step (every subject alike)
        for subject in subjects:
            reset_peak_rss()
            load_s = 0.0
            if subject.grows:
                load_s = await grow(subject, plan, growth)
                if "find_entities" in subject.ops:
                    for user in plan.users:
                        await subject.add_entities(user, range(have.get(user, 0), per_user))
            if not subject.measured:
                continue
            entry: dict[str, Any] = {
                "messages": plan.messages,
                "sessions": len(plan.lengths),
                "users": len(plan.users),
                "entities": per_user * len(plan.users),
                "loaded": loaded if subject.grows else 0,
                "load_s": load_s,
                "load_msgs_per_s": loaded / load_s if load_s else None,
            }
            # Unrecorded, before each step's figures: caches, the JIT, and plans. Neo4j
            # plans each query again once the store's statistics have moved (here: grown
            # tenfold since the last step), 0.5 to 1 s for the turn's larger queries on
            # this machine; a store growing at a real rate pays that rarely.
            await Step(subject, plan, warm_up(sizes, first=count == counts[0]), 0).run()
            started = time.perf_counter()
            entry.update(await Step(subject, plan, sizes, SEED + count).run())
            entry["measure_s"] = time.perf_counter() - started
            entry["unsupported"] = [m for m in MEASUREMENTS if entry[m] is None]
            entry["store_bytes"] = await subject.size()
            entry["client_peak_rss_mb"] = peak_rss_mb()
            found[subject.name].append(entry)
            log(_line(subject.name, entry))
        entities.update(dict.fromkeys(plan.users, per_user))
    return found


def _line(name: str, entry: dict[str, Any]) -> str:
    def p95(key: str) -> str:
        value = entry.get(key)
        return f"{value['p95_ms']:.3g}" if isinstance(value, dict) else "-"

    single = entry["ingest_single"]
    return (
        f"{name:14} {entry['messages']:>9,} msgs  load {entry['load_msgs_per_s'] or 0:,.0f}/s  "
        f"single {single['msgs_per_s'] if single else 0:,.0f}/s  newest p95 {p95('newest_100')}  "
        f"search p95 {p95('search_session')}  user-search p95 {p95('search_user')}  "
        f"turn p95 {p95('turn')} ms"
    )
