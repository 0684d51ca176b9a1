import asyncio
import gc
import logging

import pytest
import redis
import redis.asyncio

from ratelimit_harness.limiters import (
    PluginError,
    Policy,
    UnknownLimiter,
    build,
    name_of,
    plugin,
    resolve,
)
from ratelimit_harness.limiters.plugin import EventLoop, PluginLimiter, plugin_builder
from tests.limiters import sample_plugin

FIXED = Policy.parse("fixed-window:limit=3,window=3600")


@pytest.mark.integration
def test_a_users_factory_gets_the_client_and_the_policy(client: redis.Redis) -> None:
    limiter = build("tests.limiters.sample_plugin:factory", client, FIXED)
    decisions = [limiter.check("user:1") for _ in range(5)]
    assert [d.allowed for d in decisions] == [True, True, True, False, False]
    assert limiter.policy == FIXED
    assert list(client.scan_iter("user-limiter:user:1:*"))


def test_rich_results_keep_their_fields() -> None:
    policy = Policy.parse("token-bucket:capacity=2,rate=1")
    limiter = build("tests.limiters.sample_plugin:rich_factory", None, policy)
    decisions = [limiter.check("k") for _ in range(3)]
    assert [(d.allowed, d.remaining) for d in decisions] == [(True, 1), (True, 0), (False, 0)]


def test_an_async_factory_is_awaited_with_an_asyncio_client_and_its_checks_on_its_loop() -> None:
    policy = Policy.parse("fixed-window:limit=2,window=10")
    given = redis.Redis(host="127.0.0.1", port=1, db=3)  # never connected
    limiter = plugin_builder("tests.limiters.sample_plugin:async_factory")(given, policy)
    built_with = sample_plugin.GIVEN[-1]
    assert isinstance(built_with, redis.asyncio.Redis)
    assert built_with.connection_pool.connection_kwargs["port"] == 1
    assert built_with.connection_pool.connection_kwargs["db"] == 3
    decisions = [limiter.check("k") for _ in range(3)]
    assert [(d.allowed, d.remaining) for d in decisions] == [(True, 1), (True, 0), (False, -1)]
    loop = limiter.event_loop
    assert loop is not None
    limiter.close()
    assert loop.is_closed()


def _stubborn(
    loop: asyncio.AbstractEventLoop, swallows: int
) -> tuple[asyncio.Task[None], list[int]]:
    """A task on ``loop`` that swallows its first ``swallows`` cancellings."""
    refused: list[int] = []

    async def stubborn() -> None:
        while True:
            try:
                await asyncio.sleep(1)
            except asyncio.CancelledError:
                refused.append(len(refused) + 1)
                if len(refused) > swallows:
                    raise

    return loop.create_task(stubborn()), refused


def test_closing_ends_a_task_however_many_cancellings_it_swallows() -> None:
    loop = EventLoop()
    task, refused = _stubborn(loop, 300)
    PluginLimiter(lambda identity: True, FIXED, loop=loop).close()
    assert task.cancelled()
    assert len(refused) == 301
    assert loop.is_closed()


def test_a_task_that_never_ends_is_left_behind_once_stopping_has_passed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(plugin, "STOPPING", 0.05)
    loop = EventLoop()
    task, refused = _stubborn(loop, 10**9)
    PluginLimiter(lambda identity: True, FIXED, loop=loop).close()
    assert loop.is_closed()
    assert not task.done()
    assert len(refused) > 1  # cancelled again and again, not once
    task.get_coro().close()
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        del task
        gc.collect()
    assert "Task was destroyed but it is pending" in caplog.text  # asyncio says what was left


def test_an_async_check_refuses_to_run_inside_a_running_loop() -> None:
    policy = Policy.parse("fixed-window:limit=2,window=10")
    build_it = plugin_builder("tests.limiters.sample_plugin:async_factory")
    limiter = build_it(redis.Redis(port=1), policy)

    async def inside() -> None:
        with pytest.raises(PluginError, match="where an event loop runs already"):
            limiter.check("k")

    asyncio.run(inside())
    assert limiter.check("k").allowed  # outside, it runs
    limiter.close()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tests.limiters.no_such_module:factory", "cannot import 'tests.limiters.no_such_module'"),
        ("tests.limiters.sample_plugin:missing", "has no attribute 'missing'"),
        ("tests.limiters.sample_plugin:NOT_CALLABLE", "is not callable"),
        ("tests.limiters.sample_plugin:returns_nothing_callable", "not a callable check"),
        (":factory", "expected module:attribute"),
        (
            "tests.limiters.sample_plugin:raises_when_built",
            r"raises_when_built\(client, policy\) raised KeyError: 'RATE_SERVICE_URL'",
        ),
    ],
)
def test_bad_plugins_are_refused_with_a_reason(spec: str, message: str) -> None:
    with pytest.raises(PluginError, match=message):
        build(spec, None, FIXED)


def test_unknown_names_list_the_catalogue() -> None:
    with pytest.raises(UnknownLimiter, match="known: naive-get-set, colleague"):
        build("fixed-window", None, FIXED)


def test_a_factory_object_is_built_as_the_name_it_goes_by() -> None:
    policy = Policy.parse("token-bucket:capacity=2,rate=1")
    given = sample_plugin.rich_factory
    assert name_of(given) == "tests.limiters.sample_plugin:rich_factory"  # importable as that
    by_object, by_name = resolve(given)(None, policy), resolve(name_of(given))(None, policy)
    assert [by_object.check("k").allowed for _ in range(3)] == [True, True, False]
    assert [by_name.check("k").allowed for _ in range(3)] == [True, True, False]


def test_what_is_neither_a_name_nor_a_factory_is_refused() -> None:
    with pytest.raises(UnknownLimiter, match="a limiter is a name or a factory, not 42"):
        resolve(42)  # type: ignore[arg-type]
