"""The race explorer: instances on a scheduled wire, virtual clocks, nemeses, search and traces.

Its rooms, lowest first: ``server`` and ``clocks``, ``wire``, ``instances``, ``schedule``,
``search``. A room imports only rooms below it. The modules here sit above them all: one race
as a value (``spec``), a saved trace (``trace``), race-test (``campaign``, ``parallel``), the
naive stress test (``stress``) and the commands (``commands``).
"""
