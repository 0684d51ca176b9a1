"""Traffic patterns, one thin locustfile each, over the user class in ``harness.load.swarm``.

``ratelimit-harness load --locustfile NAME`` takes a pattern by its name here (``burst``,
``boundary``, ...) or any locustfile by path.
"""
