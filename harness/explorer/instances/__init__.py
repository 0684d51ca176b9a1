"""App instances: a thread of the explorer's process (``thread``), with the threads its limiter
starts (``background``), or an OS process behind a proxy (``process``), which is at rest once
``waiting`` says so. Each stops before every command until the explorer lets it go.

May import: ``wire``, ``server`` and ``clocks``; a program's clock is
``harness.process_clock``.
"""
