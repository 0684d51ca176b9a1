import pytest
import redis

from limiters import PluginError, Policy, UnknownLimiter, build

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
