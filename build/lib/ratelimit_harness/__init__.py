"""ratelimit-harness: load-testing and correctness verification for Redis-backed rate limiters.

This is the package's one import name. Its parts are the repository's top-level folders
(``harness``, ``limiters``, ``locustfiles``, ``reports``), reached here as
``ratelimit_harness.harness`` and so on: a user's own ``limiters`` package never meets ours
(docs/layout.md).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ratelimit-harness")
except PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0+unknown"
