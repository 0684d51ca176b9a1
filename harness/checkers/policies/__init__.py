"""One checker per policy kind, and the block on fixed windows: each finds one key's
over-admissions and wrongful rejections.

May import: ``view``, ``shared`` and ``placement``.
"""
