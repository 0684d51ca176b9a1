"""Where the harness keeps what it builds or installs for the user, outside the installed
package (which may not be writable): ``$XDG_CACHE_HOME/ratelimit-harness``, by default
``~/.cache/ratelimit-harness``."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ratelimit-harness"
