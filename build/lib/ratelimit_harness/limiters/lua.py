"""A Lua script run by its SHA1 (EVALSHA), loaded only when the server answers NOSCRIPT.

redis-py's ``Script`` does the same through three more layers of calls on every run; on a path
that is one round trip those layers are a tenth of a decision. ``run`` goes straight to the
client's ``execute_command`` (so a driver that wraps that method sees every EVALSHA), and on
NOSCRIPT loads the script with ``script_load`` (SCRIPT LOAD, on every primary of a Cluster) and
sends the same EVALSHA once more, as redis-py does.
"""

from __future__ import annotations

import hashlib
from typing import Any

from redis.exceptions import NoScriptError


class LuaScript:
    __slots__ = ("sha", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()

    def run(self, client: Any, key: str, *args: object) -> Any:
        """The script's reply for one key (``KEYS[1]``) and ``args`` (``ARGV``)."""
        return self.run_on(client, (key,), *args)

    def run_on(self, client: Any, keys: tuple[str, ...], *args: object) -> Any:
        """The script's reply for ``keys`` (``KEYS``) and ``args`` (``ARGV``)."""
        try:
            return client.execute_command("EVALSHA", self.sha, len(keys), *keys, *args)
        except NoScriptError:
            client.script_load(self.source)
            return client.execute_command("EVALSHA", self.sha, len(keys), *keys, *args)
