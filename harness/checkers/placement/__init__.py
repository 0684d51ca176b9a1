"""Whether admissions can sit in their intervals so that a rule holds (``search``, which also
holds ``Findings``, what every checker returns), with the rules as constraints (``rules``).

May import: ``view`` and ``shared``.
"""
