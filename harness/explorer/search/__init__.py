"""The search for a failing schedule: the bounded stage (``bounded``, states seen in
``visited``), then random draws (``drawing``), a find confirmed and shrunk (``explore``,
``minimize``).

May import: ``schedule`` and every room below it.
"""
