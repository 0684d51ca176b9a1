"""The verdict of what both sides recorded: after the run (``final``) and while it goes
(``live``, a process of its own). The headers are held to what was admitted (``truth``,
``promises``); what the clients saw is counted (``client_view``, with ``latency``).

May import: ``faults``, ``system`` and ``contract``.
"""
