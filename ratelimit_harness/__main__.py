from ratelimit_harness.harness.cli import main

if __name__ == "__main__":  # not when a spawned worker imports this module as its main
    raise SystemExit(main(prog="python -m ratelimit_harness"))
