"""Histories: what a run did, one operation per line, as the checkers read it."""

from harness.history.operation import Operation, Outcome

__all__ = ["Operation", "Outcome"]
