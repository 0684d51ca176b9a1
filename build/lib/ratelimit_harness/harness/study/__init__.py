"""The chapter's comparison table (Part 10), measured on a real Redis: ``ratelimit-harness
study``. One module per measurement, each on the Redis and the keys of a ``space``:

- ``memory``: bytes per identity as the requests in a window rise, and the chapter's "1 million
  sorted-set entries is about 40 MB";
- ``accuracy``: the sliding-window counter (and the fixed window) against the exact sliding
  window, over a synthetic ``workload`` of many sources;
- ``burst``: what a sudden burst, and the boundary attack's double burst, gets through;
- ``cost``: round trips, commands and server time per decision.

Every decision they make on Redis goes into ``judged``'s histories, judged and kept in the run
directory. ``run`` puts the measurements together into ``study.json``; ``reports/study.py``
turns that into the table, beside the chapter's claims (``subjects``).
"""
