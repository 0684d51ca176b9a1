"""Clocks: the run's virtual time and each instance's clock on it (``virtual``), where Python code
keeps a clock so it can be swapped (``kept``), and the clocks the explorer cannot move
(``real``).

May import: the provisioning of Redis (the server's clock) and the process clock
(``harness.process_clock``), nothing of the explorer's own.
"""
