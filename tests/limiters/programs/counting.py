"""A line-protocol limiter with no Redis: at most RATELIMIT_POLICY's limit per identity, ever.

Asked ``junk``, it answers junk; asked ``die``, it exits 3 saying why on stderr; asked
``json``, it answers in JSON; asked ``mute``, it never answers that one.
"""

import json
import os
import sys

limit = int(os.environ["RATELIMIT_POLICY"].split("limit=")[1].split(",")[0])
counts: dict[str, int] = {}
print(f"instance {os.environ['RATELIMIT_INSTANCE']} on {os.environ['REDIS_URL']}", file=sys.stderr)
for line in sys.stdin:
    identity = line.rstrip("\n")
    if identity == "junk":
        print("perhaps", flush=True)
    elif identity == "die":
        print("giving up: asked to die", file=sys.stderr, flush=True)
        sys.exit(3)
    elif identity == "json":
        print(json.dumps({"allowed": True, "remaining": 4, "reset_at": 12.5}), flush=True)
    elif identity != "mute":
        counts[identity] = counts.get(identity, 0) + 1
        print("allowed" if counts[identity] <= limit else "rejected", flush=True)
