"""``python -m bench.nams_server``: the NAMS-compatible server (``memory://``, test keys,
admin routes) for the bench, in a process of its own, as the service is remote. Prints
its base URL on the first line and serves until its standard input closes. An argument
names another backing store (the scale bench: ``sqlite:///path``, a Bolt URI)."""

from __future__ import annotations

import sys

from memory_core_dev.nams_server import NamsTestServer


def main() -> int:
    server = NamsTestServer(sys.argv[1] if len(sys.argv) > 1 else "memory://").start()
    try:
        print(server.base_url, flush=True)
        sys.stdin.read()  # until the bench closes it (or exits)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
