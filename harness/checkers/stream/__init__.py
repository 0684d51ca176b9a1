"""One busy identity judged as its operations come, in memory that does not grow with its
history, with the findings ``policies`` would give (``identity``, and one module per kind of
judging). Where it cannot (``NotStreamable``), the identity is judged whole.

May import: every room below it.
"""
