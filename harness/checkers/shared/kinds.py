"""Policy kinds judged alike, named once for the checkers and the stream that both sort by them."""

ALIGNED = ("fixed-window", "fixed-window:phase=crc32")  # each identity's own windows, or not
BUCKETS = ("token-bucket", "gcra")  # a bucket refilled at a rate: GCRA is one too
