"""A line-protocol program that cannot start: it says why on stderr and exits 4."""

import sys

print("starting up", file=sys.stderr)
print("RuntimeError: no licence for this limiter", file=sys.stderr)
print("bye", file=sys.stderr)
sys.exit(4)
