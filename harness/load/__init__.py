"""The load half: the API under test in several processes, a Locust swarm against it, and the
verdict of what both sides recorded.

Its rooms, lowest first: ``contract`` (what every process agrees on: rules, headers, journals,
the environment), ``system`` (the API under test: the app, its instances, a service of the
user's, Redis), ``faults`` (the nemesis and its fault proxy), ``judge`` (the verdict, live and
after), ``web`` (the Correctness tab), ``traffic`` (the Locust side's answers and shipping). A
room imports only rooms below it. The modules here sit above them all: ``swarm`` (the Locust glue
the locustfiles build on), ``run`` and ``commands`` (the ``load`` and ``serve`` commands).
"""
