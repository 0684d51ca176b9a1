"""The load half: the API under test in several processes, a Locust swarm against it, and the
verdict of what both sides recorded.

- the system under test: ``rules`` (which limiter holds which endpoint), ``app`` and its
  ``middleware`` (with ``headers``), ``outbound`` and the ``sms_provider``, ``serve`` (the
  instances as processes; ``service``, a service of the user's, each copy under a
  ``group_guard``), ``journals`` (what each process recorded);
- the traffic: ``swarm`` (the Locust glue the locustfiles build on), ``latency``,
  ``client_view``, ``truth`` and ``promises`` (whether the headers told the truth);
- the verdict: ``live`` (while it runs, shown by ``web`` in Locust's UI), ``judge`` and
  ``summary`` (after);
- ``run`` and ``commands``: the ``load`` and ``serve`` commands.
"""

ENV = "HARNESS_LOAD_"  # the prefix of the variables that carry a run's settings to its processes
FAIL_HEADER = "X-Fail"  # a request the app answers 502, as if what it depends on had failed
