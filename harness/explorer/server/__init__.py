"""The server's state as a run sees it: which keys a command touches and when each expires
(``keys``), and which keys a run may remove (``keyspace``).

May import: the provisioning of Redis (``harness.provision``), nothing of the explorer's own.
"""
