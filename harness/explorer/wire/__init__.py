"""The wire: where each command a limiter sends is caught and held until the explorer's turn.

In the explorer's process, redis-py's and valkey-py's connections are intercepted (``intercept``,
``intercept_asyncio``). A program's commands pass a scheduling proxy of its own (``proxy``), cut
into commands by ``resp`` and into points by ``steps``. ``connections`` carries clean connections
from one run to the next; ``unseen`` counts the commands that reached the server another way.

May import: ``server``. Never the instances, the schedule or the search.
"""
