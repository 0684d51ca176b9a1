"""Rules every checker shares: the edge rule (``edges``), what can fall in a span
(``counting``), weighted requests as units (``units``), the shape of a wrongful rejection
(``rejections``), what a policy allows over a span (``allowance``), and which policy kinds
are judged alike (``kinds``).

May import: ``view``.
"""
