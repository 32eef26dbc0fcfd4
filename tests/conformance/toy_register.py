"""Registers the toy schemes; importable, or loaded as a pytest plugin with
``-p tests.conformance.toy_register`` so ``--backend-url toy://`` works from the command line."""

from __future__ import annotations

from memory_core import register_backend

SCHEMES = {
    "toy": "memory_core.conformance.example_backend:ToyStore",
    "toy-search-leak": "tests.conformance.toy_broken:IgnoresSessionInSearch",
    "toy-delete-raises": "tests.conformance.toy_broken:DeleteRaises",
    "toy-keeps-oldest": "tests.conformance.toy_broken:KeepsOldest",
    "toy-drops-metadata": "tests.conformance.toy_broken:DropsMetadata",
}

for _scheme, _path in SCHEMES.items():
    register_backend(_scheme, _path)
