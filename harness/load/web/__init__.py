"""The Correctness tab of Locust's web UI (``tab``) and its page of live charts
(``charts.html``): the live verdict beside what the clients saw.

May import: ``judge`` and every room below it.
"""
