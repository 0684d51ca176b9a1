"""How the kinds become one verdict: the table of parts (``table``), several limits and
weighted requests joined (``joined``), give-backs stood in (``refunds``), and what the run left
in Redis (``state``).

May import: every room below it: ``view``, ``shared``, ``figures``, ``placement``, ``policies``.
"""
