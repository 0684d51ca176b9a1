"""``python -m reports SOURCE [--out DIR]``; several load run directories make
``instances.png`` instead (violations against instances)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ratelimit_harness.reports import build, build_instances


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports", description=__doc__)
    parser.add_argument("sources", nargs="+", type=Path, help="a run directory or a trace file")
    parser.add_argument("--out", type=Path, help="default: the run directory (a trace's own)")
    args = parser.parse_args(argv)
    source = args.sources[0]
    out = args.out or (source.parent if source.is_file() else source)
    try:
        several = len(args.sources) > 1
        written = build_instances(args.sources, out) if several else build(source, out)
    except (ValueError, OSError) as e:
        print(e, file=sys.stderr)
        return 2
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
