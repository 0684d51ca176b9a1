"""A user's own limiter, plugged in as ``module:attribute``.

The attribute is a factory called as ``factory(client, policy)`` (a redis-py client and the
parsed Policy) that returns a callable ``check(identity)``; ``check`` returns a bool or an object
with ``.allowed``. It may read ``time.time()`` itself. A weighted request (one that costs n units
of the budget) is asked as ``check(identity, n)``; one that costs 1 is always ``check(identity)``.

asyncio: ``check`` may be ``async def`` (or return an awaitable), and the factory itself may be
``async def``: then it is given a ``redis.asyncio.Redis`` on the same server instead, and
awaited. Either way each limiter built runs its coroutines on an event loop of its own, kept
while it lives (so the clients and connections made on it stay valid), and closed by ``close``.

An async factory may start tasks of its own that outlive it (a loop that trims old entries
every few seconds). Such a task runs whenever that loop runs, that is inside checks, as real
time lets it. ``in_a_build`` tells whether a task made now is one of those, so that a driver
that orders every command can order that task's too.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

from ratelimit_harness.limiters.base import check_args
from ratelimit_harness.limiters.decision import Decision
from ratelimit_harness.limiters.policy import Policy

# set for an async factory's run, and so in every task it starts (a task copies the context it
# is made in)
_building: contextvars.ContextVar[bool] = contextvars.ContextVar("building", default=False)


def in_a_build() -> bool:
    """Whether an async factory runs here, or a task it started: a task made here outlives
    the build."""
    if not _building.get():
        return False
    try:
        return asyncio.current_task() is not None
    except RuntimeError:  # no loop runs here: the factory's own task is about to be made
        return False


class PluginError(ValueError):
    """A ``module:attribute`` that does not name a usable limiter factory."""


def load_factory(spec: str) -> Callable[[Any, Policy], Any]:
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise PluginError(f"expected module:attribute, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise PluginError(f"cannot import {module_name!r} for {spec!r}: {error}") from None
    factory = module
    for part in attribute.split("."):
        try:
            factory = getattr(factory, part)
        except AttributeError:
            raise PluginError(f"{module_name!r} has no attribute {attribute!r}") from None
    if not callable(factory):
        raise PluginError(f"{spec} is not callable")
    return factory


class EventLoop(asyncio.SelectorEventLoop):
    """An event loop whose timers keep the real monotonic clock, read where a driver that swaps
    ``time.monotonic`` for a virtual clock does not reach: ``asyncio.sleep`` and timeouts wait
    real time, as ``time.sleep`` does, and never wait on a clock that stands still."""

    _monotonic = (time.monotonic,)  # in a tuple: a driver swaps a clock kept as an attribute

    def time(self) -> float:
        return self._monotonic[0]()


class PluginLimiter:
    """Presents a user's ``check`` callable as a Limiter."""

    def __init__(
        self,
        check: Callable[[str], object],
        policy: Policy,
        *,
        loop: EventLoop | None = None,
        owned: tuple[Any, ...] = (),
    ) -> None:
        """``loop``: the event loop the factory ran on (else one is made at the first awaitable
        ``check`` answers); ``owned``: asyncio clients made for the factory, closed with it."""
        if not callable(check):
            raise PluginError(f"the factory returned {check!r}, not a callable check(identity)")
        self._check = check
        self.policy = policy
        self.event_loop = loop
        self._owned = owned

    def check(self, identity: str, cost: int = 1) -> Decision:
        answer = self._check(*check_args(identity, cost))
        if inspect.isawaitable(answer):
            _not_inside_a_loop(answer)
            self.event_loop = self.event_loop or EventLoop()
            answer = self.event_loop.run_until_complete(_awaited(answer))
        return Decision.from_user(answer)

    def close(self, last: Callable[[asyncio.AbstractEventLoop], None] = lambda loop: None) -> None:
        """End the tasks left on the loop, close the asyncio clients made for the factory, let
        ``last(loop)`` close what else is open on it, close it. Nothing to do for a limiter that
        never awaited."""
        loop, self.event_loop = self.event_loop, None
        if loop is not None:
            _shut(loop, self._owned, last)


# the tasks left on a loop are cancelled again every CANCEL_EVERY seconds, for STOPPING
# seconds at most; one still running then is left behind with the loop
STOPPING, CANCEL_EVERY = 5.0, 0.001


def _shut(
    loop: asyncio.AbstractEventLoop,
    owned: tuple[Any, ...],
    last: Callable[[asyncio.AbstractEventLoop], None] = lambda loop: None,
) -> None:
    loop.run_until_complete(_cancel_the_rest(STOPPING))
    for client in owned:
        loop.run_until_complete(client.aclose())
    last(loop)
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


def _not_inside_a_loop(answer: Awaitable[object]) -> None:
    """An asyncio check is run on the limiter's own loop, which cannot run inside another."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    if inspect.iscoroutine(answer):
        answer.close()
    raise PluginError("an async check cannot run where an event loop runs already (load, serve)")


async def _cancel_the_rest(seconds: float) -> None:
    """Cancel every other task on this loop until none is left, or ``seconds`` have passed.

    Once is not enough: on Python 3.11 ``asyncio.wait_for`` swallows a cancelling that arrives
    as what it waits for is done, and redis-py wraps every read and write in one, so a task
    that keeps sending (a clock sync, a health check) swallows about one cancelling in four.
    Cancelled again after each stop of a loop run, such a task swallowed up to 17 in a row in
    858 closes on a busy machine (a stop lands between a wait being done and the task's next
    step); with the loop running on between cancellings, two at most in as many."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while left := asyncio.all_tasks(loop) - {asyncio.current_task()}:
        if loop.time() >= deadline:
            return
        for task in left:
            task.cancel()
        await asyncio.wait(left, timeout=CANCEL_EVERY)


async def _awaited(answer: Awaitable[object]) -> object:
    return await answer


def name_of(limiter: str | Callable[..., Any]) -> str:
    """A limiter's name: a catalogue name or ``module:attribute`` as given; a factory object as
    ``module:qualified.name`` (importable as that when it is defined at a module's top level)."""
    if isinstance(limiter, str):
        return limiter
    name = getattr(limiter, "__qualname__", type(limiter).__qualname__)
    return f"{getattr(limiter, '__module__', '?')}:{name}"


def plugin_builder(factory: str | Callable[..., Any]) -> Callable[..., PluginLimiter]:
    """The factory ``module:attribute`` imported now (or given as it is); build with
    ``builder(client, policy)``. A plug-in reads its own clock, so the clock keywords the
    catalogue's limiters take are ignored."""
    spec = name_of(factory)
    if isinstance(factory, str):
        factory = load_factory(factory)
    asynchronous = inspect.iscoroutinefunction(factory)

    def builder(client: Any, policy: Policy, **_clocks: Any) -> PluginLimiter:
        loop: EventLoop | None = None
        owned: tuple[Any, ...] = ()
        if asynchronous:  # awaited on the loop its checks will run on, with an asyncio client
            client = _asyncio_client(client)
            loop, owned = EventLoop(), (client,)
        try:
            made = factory(client, policy)
            check = made if loop is None else _built(loop, made)
        except Exception as error:
            if loop is not None:
                _shut(loop, owned)
            raise PluginError(f"{spec}(client, policy) raised {_described(error)}") from error
        return PluginLimiter(check, policy, loop=loop, owned=owned)

    return builder


def _built(loop: asyncio.AbstractEventLoop, made: Awaitable[Any]) -> Any:
    """Await an async factory's answer on ``loop``, in a context that marks the tasks it
    starts (see ``in_a_build``)."""

    def run() -> Any:
        _building.set(True)
        return loop.run_until_complete(_awaited(made))

    return contextvars.copy_context().run(run)


def _asyncio_client(client: Any) -> Any:
    """A ``redis.asyncio.Redis`` on the server ``client`` (a redis-py client) is on."""
    import redis.asyncio

    return redis.asyncio.Redis.from_url(url_of(client))


def url_of(client: Any) -> str:
    """The URL of the server a redis-py (or valkey-py) client connects to."""
    kwargs = client.connection_pool.connection_kwargs
    db = kwargs.get("db", 0)
    if kwargs.get("path"):
        return f"unix://{kwargs['path']}?db={db}"
    user, password = kwargs.get("username"), kwargs.get("password")
    auth = f"{quote(user or '', safe='')}:{quote(password, safe='')}@" if password else ""
    return f"redis://{auth}{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{db}"


def _described(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".replace("\n", " ")
