"""Commands that reached the server by a client the explorer cannot see: counted, never silent.

The explorer schedules what passes through redis-py's and valkey-py's connections (``wire``). A
limiter that talks to Redis otherwise (RESP over a plain socket, a client library built on
neither) sends commands no schedule chose, and a verdict on its runs would judge interleavings
that never happened as if they covered it. So on a server the harness started, every command is
logged in the server's own slow log (a threshold of 0 µs logs them all) with the address of the
client that sent it: a run empties the log when it starts and reads it when it ends, and each
entry whose client is none of the connections that went through the wire (``wire.addresses``)
came unseen. The explorer's own commands, the limiter's on seen clients (scheduled, or from a
thread of its own: those are in the trace as unscheduled) and the commands their scripts run
are all logged under seen clients, so the count is exactly what the others made the server run:
each command, each one a script of theirs ran, and each one queued in a MULTI block of theirs
and the MULTI (the server does not log EXEC).

On a Redis the harness did not start nothing is counted: its slow log and configuration are its
owner's, and another client's commands there could not be told from the limiter's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import redis

from harness.explorer import wire
from harness.explorer.keys import text

LOG_LENGTH = 100_000  # entries the log keeps: far more than one run sends
# The log's entries of clients the explorer does not see, counted on the server so that a run
# reads two numbers, not every command it sent.
# ARGV: the addresses of the clients the explorer sees ("host:port")
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


class Unseen:
    """Counts, over one run, the commands of clients the wire did not see."""

    def __init__(self, admin: redis.Redis) -> None:
        self.admin = admin
        wire.forget_closed()
        start = admin.pipeline(transaction=False)
        start.config_set("slowlog-log-slower-than", 0)
        start.config_set("slowlog-max-len", LOG_LENGTH)
        start.slowlog_reset()
        start.execute()

    def count(self) -> Count:
        """The run is over: what reached the server unseen since it began."""
        count, first = self.admin.eval(_COUNT, 0, *sorted(wire.addresses()))
        return Count(int(count), [text(command) for command in first])


def said(count: int, first: list[str]) -> str:
    """What reached the server unseen, in words."""
    return (
        f"Redis ran {count} command{'s' * (count != 1)} for clients the explorer cannot see "
        f"(not redis-py's or valkey-py's connections; their scripts' own commands count), "
        f"none of them scheduled (the first: {'; '.join(first)})"
    )
