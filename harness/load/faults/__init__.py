"""The nemesis: faults done to the system under test on a schedule (``nemesis``), the network
ones through a TCP proxy between the instances and Redis (``proxy``, its own process
``proxy_server``), and what each fault did to each rule's requests (``effects``).

May import: ``system`` and ``contract``.
"""
