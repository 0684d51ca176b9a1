"""The harness: provisioning, the race explorer, load, the checkers, histories and the CLI."""
