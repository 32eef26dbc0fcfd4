"""Registers ``toy://`` and the catalogue's schemes; loaded as a pytest plugin with
``-p tests.conformance.toy_register`` so ``--backend-url toy://`` works from the command line
(in-process tests call :func:`tests.conformance.catalogue.register` themselves)."""

from __future__ import annotations

from tests.conformance.catalogue import register

register()
