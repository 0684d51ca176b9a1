"""A line-protocol program that answers each line with the time it reads, in JSON (``now``)."""

import json
import sys
import time

for _ in sys.stdin:
    print(json.dumps({"allowed": True, "now": time.time()}), flush=True)
