"""A forked child (mutmut forks one per mutant from a process that ran the tests) gets a
shared NAMS server of its own: the parent's thread did not follow it into the child, and
the parent would serve the child's requests with the parent's fault knobs and record."""

from __future__ import annotations

import os

from memory_core_dev.nams_server import shared_nams_server


def _child_sees_its_own_requests(parent_url: str) -> int:
    server = shared_nams_server("memory://")
    if server.base_url == parent_url:
        return 3
    mark = server.mark()
    with server.client() as client:
        client.get("/health")
    return 0 if server.since(mark) else 4


def test_a_forked_child_starts_its_own_shared_server() -> None:
    parent = shared_nams_server("memory://")
    mark = parent.mark()
    pid = os.fork()
    if pid == 0:  # the child: report through the exit code only
        code = 5
        try:
            code = _child_sees_its_own_requests(parent.base_url)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert parent.since(mark) == []  # nothing of the child's reached the parent's
    assert shared_nams_server("memory://") is parent
