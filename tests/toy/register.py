"""Registers the toy schemes; importable, or loaded as a pytest plugin with
``-p tests.toy.register`` so ``--backend-url toy://`` works from the command line."""

from __future__ import annotations

from memory_core import register_backend

SCHEMES = {
    "toy": "tests.toy.toy_backend:ToyBackend",
    "toy-search-leak": "tests.toy.broken:IgnoresSessionInSearch",
    "toy-delete-raises": "tests.toy.broken:DeleteRaises",
    "toy-keeps-oldest": "tests.toy.broken:KeepsOldest",
    "toy-drops-metadata": "tests.toy.broken:DropsMetadata",
}

for _scheme, _path in SCHEMES.items():
    register_backend(_scheme, _path)
