"""The corpus: released Redis rate limiters from PyPI, each pinned, wrapped in the plug-in
contract in a few lines (one module per library), raced, and held to the verdict the table
(``corpus.table``) expects, with the reason for each: the library's own issue or line of code.

Rows whose pins can share the harness' virtual environment come from the ``corpus`` extra; the
others (several releases of one library) are installed each into a directory of its own under
``.corpus/`` (``python -m corpus.install``) and raced in a subprocess with that directory first
on ``PYTHONPATH`` (``corpus.race``), so one wrapper can be raced against every release.
"""
