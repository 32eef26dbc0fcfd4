"""A NAMS-compatible server (``memory-core serve``, extra ``server``): the wire contract
of :mod:`memory_core.nams_wire` over any memory-core backend.

* :func:`create_app` — the FastAPI app;
* :class:`Faults` — fault-injection knobs (429, 503, latency, dropped connections);
* :class:`BackgroundServer` — run it under uvicorn from a thread (tests);
* :class:`ConnectionLimits` — header, body and keep-alive deadlines and the connection cap.
"""

from .app import create_app
from .auth import ApiKeys
from .connections import ConnectionLimits
from .faults import Faults
from .runner import BackgroundServer
from .traffic import Traffic

__all__ = ["ApiKeys", "BackgroundServer", "ConnectionLimits", "Faults", "Traffic", "create_app"]
