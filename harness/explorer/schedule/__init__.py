"""One schedule: what it is made of (``actions``), the nemesis' faults as parts (``faults``), and
one run of it against a real Redis, with the history and trace it leaves (``run``).

May import: ``wire``, ``server``, ``clocks`` and ``instances``.
"""
