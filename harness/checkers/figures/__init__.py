"""Numbers that describe a history without judging it: outcomes and latency percentiles
(``metrics``), also from sorted files on disk (``latency_files``).

May import: ``view``.
"""
