from ratelimit_harness.harness.cli import main

raise SystemExit(main(prog="python -m ratelimit_harness"))
