"""How big each workload is, per mode (``--smoke``, default, ``--full``)."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Sizes:
    """Every size the workloads use. ``--full`` is the issue's table; the default is a
    smaller run that finishes in minutes on a shared machine; ``--quick`` is a first look
    in seconds; ``--smoke`` only checks that the harness works."""

    repeats: int = 5
    warmups: int = 1  # unrecorded rounds of every subject before the repeats
    singles: int = 200  # add_message calls per repeat (p50/p95 over them)
    batch_total: int = 5_000  # messages per batch-ingest repeat
    batch_sizes: tuple[int, ...] = (100, 500)
    read_points: tuple[int, ...] = (1_000, 10_000)  # newest-100 at these lengths
    reads: int = 20  # reads per point per repeat
    search_points: tuple[int, ...] = (10_000,)  # text search over these store sizes
    searches: int = 30  # per repeat: enough for Neo4j to have compiled the statements
    conversations: int = 1_000  # list_conversations over this many
    list_limit: int = 1_000
    lists: int = 5  # list calls per repeat (the median is reported: one call is noisy)
    turns: int = 30  # agent turns through the turn protocol
    vector_dimensions: int = 64
    keyset_conversations: int = 10_000  # keyset paging (list_conversations_page) over these
    keyset_page: int = 100  # conversations per page
    keyset_deep: int = 50  # the page timed beside the first one
    keyset_reads: int = 5  # reads of each page per repeat (the median is reported)
    long_term_adds: int = 200  # add_preference / add_fact calls per repeat
    long_term_records: int = 2_000  # preferences of the searched user
    long_term_entities: int = 2_000  # entities of the graph related_entities walks
    long_term_reads: int = 30  # searches / walks per repeat (the median is reported)
    reasoning_steps: int = 200  # add_step + record_tool_call pairs per repeat
    reasoning_traces: int = 2_000  # traces of the measured user (10 tool calls each)
    reasoning_reads: int = 20  # statistics / similar-trace reads per repeat (median)


DEFAULT = Sizes()
FULL = Sizes(
    singles=1_000,
    batch_total=10_000,
    reads=50,
    searches=50,
    read_points=(1_000, 10_000, 100_000),
    search_points=(10_000, 100_000),
    conversations=5_000,
    lists=10,
    turns=200,
    long_term_adds=500,
    long_term_records=10_000,
    long_term_entities=10_000,
    long_term_reads=50,
    reasoning_steps=500,
    reasoning_traces=10_000,
    reasoning_reads=30,
)
SMOKE = replace(
    DEFAULT,
    repeats=2,
    warmups=0,
    singles=5,
    batch_total=40,
    batch_sizes=(10, 20),
    read_points=(20, 40),
    reads=3,
    search_points=(30,),
    searches=2,
    conversations=12,
    list_limit=10,
    lists=1,
    turns=3,
    vector_dimensions=8,
    keyset_conversations=30,
    keyset_page=5,
    keyset_deep=4,
    keyset_reads=1,
    long_term_adds=3,
    long_term_records=40,
    long_term_entities=40,
    long_term_reads=2,
    reasoning_steps=3,
    reasoning_traces=40,
    reasoning_reads=2,
)
# A first look in seconds: every group at small sizes, with the usual repeats.
QUICK = replace(
    SMOKE,
    repeats=5,
    warmups=1,
    reasoning_steps=50,
    reasoning_traces=300,
    reasoning_reads=10,
)
