"""ratelimit-harness: load-testing and correctness verification for Redis rate limiters."""
