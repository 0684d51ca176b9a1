"""Commands that reached the server by a client the explorer cannot see: counted, never silent.

The explorer schedules what passes through redis-py's and valkey-py's connections (``intercept``). A
limiter that talks to Redis otherwise (RESP over a plain socket, a client library built on
neither) sends commands no schedule chose, and a verdict on its runs would judge interleavings
that never happened as if they covered it. So on a server the harness started, every command is
logged in the server's own slow log (a threshold of 0 µs logs them all) with the address of the
client that sent it: a run empties the log when it starts and reads it when it ends, and each
entry whose client is none of the connections that went through the wire (``intercept.addresses``)
came unseen. The explorer's own commands and the limiter's on seen clients (scheduled, or from a
thread of its own: those are in the trace as unscheduled) are all logged under seen clients, so
the count is exactly what the others made the server run: each command, and each one queued in
a MULTI block and the MULTI (the server does not log EXEC). The commands a script runs are
logged under its caller on Valkey (the explorer's own server), so an unseen client's scripts
count with what they run; Redis logs them under its script engine (``?:0``), nobody's
connection, and they are not counted there.

Counted only on a server the harness started as a process of its own (``countable``): the slow
log and configuration of a Redis it was given are its owner's, and another client's commands
there could not be told from the limiter's; a container's sees its clients through Docker's
port mapping, under addresses that are not theirs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import redis

from ratelimit_harness.harness.explorer.server.keys import text
from ratelimit_harness.harness.explorer.wire import intercept
from ratelimit_harness.harness.provision import RedisServer

LOG_LENGTH = 100_000  # entries the log keeps: far more than one run sends
SCRIPT_ENGINE = "?:0"  # the client Redis logs a script's own commands under
SHOWN = 80  # characters of an unseen command kept for the report
# The log's entries of clients the explorer does not see, counted on the server so that a run
# reads two numbers, not every command it sent.
# ARGV: the addresses of the clients the explorer sees ("host:port"), and the script engine's
# returns: {how many entries came from other clients, the first three of them (each a command's
# words joined by spaces), oldest first}
_COUNT = """
local seen = {}
for _, address in ipairs(ARGV) do seen[address] = true end
local log = redis.call('SLOWLOG', 'GET', '-1')
local count, first = 0, {}
for i = #log, 1, -1 do
  local entry = log[i]
  if not seen[entry[5]] then
    count = count + 1
    if #first < 3 then first[#first + 1] = table.concat(entry[4], ' ') end
  end
end
return {count, first}
"""


@dataclass(frozen=True)
class Count:
    """What one run's server received from clients the explorer cannot see."""

    commands: int = 0
    first: list[str] = field(default_factory=list)  # the first few, as the server logged them


def countable(server: RedisServer) -> bool:
    """Whether commands of unseen clients are counted on ``server`` (see above)."""
    return server.how in ("virtual-time", "embedded")


class Unseen:
    """Counts, over one run, the commands of clients the wire did not see."""

    def __init__(self, admin: redis.Redis) -> None:
        self.admin = admin
        intercept.forget_closed()
        start = admin.pipeline(transaction=False)
        start.config_set("slowlog-log-slower-than", 0)
        start.config_set("slowlog-max-len", LOG_LENGTH)
        start.slowlog_reset()
        start.execute()

    def count(self, also_seen: Iterable[str] = ()) -> Count:
        """The run is over: what reached the server unseen since it began (by clients other than
        the wire's and ``also_seen``'s addresses: a scheduling proxy's connections, say)."""
        seen = sorted(intercept.addresses() | set(also_seen))
        count, first = self.admin.eval(_COUNT, 0, SCRIPT_ENGINE, *seen)
        return Count(int(count), [_shown(text(command)) for command in first])


def _shown(command: str) -> str:
    """A logged command on one line, at most ``SHOWN`` characters."""
    line = " ".join(command.split())
    return line if len(line) <= SHOWN else f"{line[: SHOWN - 3]}..."


def said(count: int, first: list[str]) -> str:
    """What reached the server unseen, in words."""
    return (
        f"Redis ran {count} command{'s' * (count != 1)} for clients the explorer cannot see "
        f"(not redis-py's or valkey-py's connections), none of them scheduled (the first: "
        f"{'; '.join(first)})"
    )
