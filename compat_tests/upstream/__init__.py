"""Upstream client test suites run against a broker (the second, slower target)."""
