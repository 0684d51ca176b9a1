"""The history as the checkers read it: columns of arrays (``columns``) and one key's timeline
(``timeline``).

May import: no room.
"""
