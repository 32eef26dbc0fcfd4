"""Toy backends for testing the conformance suite itself."""
