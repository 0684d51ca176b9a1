from pathlib import Path

import pytest

from ratelimit_harness.harness.history.loads import OUTBOUND
from ratelimit_harness.harness.load.contract.rules import (
    DEFAULT_OUTBOUND,
    SERVICE,
    Rule,
    Rules,
    RulesError,
    default_rules,
    load_rules,
    rules_from_json,
    tier_of,
    validated,
)
from ratelimit_harness.limiters import CATALOGUE, Policy

PLUGIN = "tests.limiters.sample_plugin:factory"
LOGIN = """
[[rule]]
name = "login"
path = "/login"
limiter = "fixed-window-lua"
policy = "fixed-window:limit=5,window=900"
"""


def rules_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rules.toml"
    path.write_text(text)
    return path


def rule_table(**fields: str) -> str:
    given = {
        "name": "r",
        "path": "/r",
        "limiter": "fixed-window-lua",
        "policy": "fixed-window:limit=1,window=1",
    } | fields
    return "[[rule]]\n" + "".join(f'{k} = "{v}"\n' for k, v in given.items() if v != "-")


def matched(rules: Rules, path: str, tier: str) -> str | None:
    rule = rules.match(path, tier)
    return None if rule is None else rule.name


@pytest.mark.parametrize(
    ("path", "tier", "expected"),
    [
        ("/login", "free", "login"),
        ("/login", "pro", "login"),  # a rule without a tier holds every tier
        ("/send-otp", "free", "send-otp"),
        ("/api/x", "free", "api"),
        ("/api/x", "pro", "api-pro"),
        ("/api/", "pro", "api-pro"),
        ("/api", "free", None),  # the prefix is "/api/"
        ("/login/", "free", None),  # an exact path is exact
        ("/", "free", None),
        ("/other", "pro", None),
    ],
)
def test_the_default_rules_hold_the_chapter_endpoints(
    path: str, tier: str, expected: str | None
) -> None:
    assert matched(default_rules(), path, tier) == expected


@pytest.mark.parametrize(
    ("api_key", "tier"),
    [
        ("pro-1", "pro"),
        ("pro-", "pro"),
        ("free-1", "free"),
        ("PRO-1", "free"),
        ("xpro-1", "free"),
        ("", "free"),
        (None, "free"),
    ],
)
def test_tier_of(api_key: str | None, tier: str) -> None:
    assert tier_of(api_key) == tier


def test_the_first_matching_rule_in_file_order_wins(tmp_path: Path) -> None:
    text = (
        rule_table(name="exact", path="/api/health")
        + rule_table(name="pro", path="/api/*", tier="pro")
        + rule_table(name="all", path="/api/*")
        + rule_table(name="shadowed", path="/api/health")
    )
    rules = load_rules(rules_file(tmp_path, text))
    assert [r.name for r in rules.rules] == ["exact", "pro", "all", "shadowed"]
    assert matched(rules, "/api/health", "pro") == "exact"
    assert matched(rules, "/api/x", "pro") == "pro"
    assert matched(rules, "/api/x", "free") == "all"


@pytest.mark.parametrize(
    ("rule_path", "path", "matches"),
    [
        ("/*", "/anything/at/all", True),
        ("/*", "/", True),
        ("/v1*", "/v1", True),
        ("/v1*", "/v10/x", True),
        ("/v1*", "/v2", False),
        ("/v1/*", "/v1", False),
        ("/v1", "/v1", True),
        ("/v1", "/v1/", False),
    ],
)
def test_a_path_ending_in_a_star_is_a_prefix(rule_path: str, path: str, matches: bool) -> None:
    rule = Rule("r", rule_path, "fixed-window-lua", "fixed-window:limit=1,window=1")
    assert rule.matches(path, "free") is matches


def test_a_tiered_rule_holds_only_its_tier() -> None:
    rule = Rule("r", "/x", "fixed-window-lua", "fixed-window:limit=1,window=1", tier="pro")
    assert rule.matches("/x", "pro")
    assert not rule.matches("/x", "free")


def test_outbound_is_last_and_names_are_in_order() -> None:
    rules = default_rules()
    assert rules.names == ["login", "send-otp", "api", "api-pro", OUTBOUND]
    assert rules.all[-1] is rules.outbound
    assert rules.named(OUTBOUND) == DEFAULT_OUTBOUND
    with pytest.raises(RulesError, match="no rule named 'nope'"):
        rules.named("nope")


def test_with_nothing_to_change_the_rules_are_the_same() -> None:
    rules = default_rules()
    assert rules.with_default(None, None) is rules


@pytest.mark.parametrize(
    ("limiter", "policy", "expected_policy"),
    [
        # the kind fits: the rule keeps its policy
        ("in-memory", None, "fixed-window:limit=10,window=1"),
        ("naive-get-set", None, "fixed-window:limit=10,window=1"),
        # it does not: the catalogue's example policy
        ("token-bucket-lua", None, CATALOGUE["token-bucket-lua"].policy),
        ("sliding-log-lua", None, CATALOGUE["sliding-log-lua"].policy),
        ("gcra-lua", None, CATALOGUE["gcra-lua"].policy),
        # a plug-in says nothing of its kind: the policy stays
        (PLUGIN, None, "fixed-window:limit=10,window=1"),
        # a policy given is taken as it is
        ("token-bucket-lua", "token-bucket:capacity=7,rate=3", "token-bucket:capacity=7,rate=3"),
        (None, "fixed-window:limit=2,window=5", "fixed-window:limit=2,window=5"),
    ],
)
def test_with_default_sets_only_the_api_rule(
    limiter: str | None, policy: str | None, expected_policy: str
) -> None:
    before = default_rules()
    after = before.with_default(limiter, policy)
    api = after.named("api")
    assert api.limiter == (limiter or "fixed-window-lua")
    assert api.policy == expected_policy
    assert api.tier == "free"
    assert [r for r in after.all if r.name != "api"] == [r for r in before.all if r.name != "api"]


@pytest.mark.parametrize(
    ("limiter", "policy", "message"),
    [
        (None, "token-bucket:capacity=5,rate=1", "enforces fixed-window"),
        ("nope", None, "unknown limiter 'nope'"),
        (None, "fixed-window:limit=0,window=1", "limit must be positive"),
        ("tests.limiters.sample_plugin:missing", None, "has no attribute 'missing'"),
        (None, "fixed-window:limit=2,window=10,phase=crc32", "race and check judge it"),
    ],
)
def test_with_default_refuses_what_cannot_work(
    limiter: str | None, policy: str | None, message: str
) -> None:
    with pytest.raises(RulesError, match=message):
        default_rules().with_default(limiter, policy)


def test_with_default_sets_what_an_api_request_costs() -> None:
    rules = default_rules().with_default("token-bucket-weighted-lua", None, cost="X-Cost")
    assert rules.named("api").cost == "X-Cost"
    assert rules.named("login").cost == "1"
    assert rules.named("api").cost_of({"X-Cost": "3"}.get) == 3


def test_with_default_needs_an_api_rule(tmp_path: Path) -> None:
    rules = load_rules(rules_file(tmp_path, LOGIN))
    with pytest.raises(RulesError, match="no rule named 'api'"):
        rules.with_default("in-memory", None)


@pytest.mark.parametrize(
    "rules",
    [
        default_rules(),
        default_rules().with_default(PLUGIN, None),
        validated(
            [Rule("a", "/a*", "gcra-lua", "gcra:capacity=3,rate=0.5", "pro")],
            Rule(OUTBOUND, "", "leaky-bucket", "leaky-bucket:rate=2,capacity=4"),
        ),
    ],
    ids=["defaults", "plugin", "custom"],
)
def test_json_round_trip(rules: Rules) -> None:
    assert rules_from_json(rules.to_json()) == rules


def test_a_good_rules_file(tmp_path: Path) -> None:
    text = (
        LOGIN
        + rule_table(name="api", path="/api/*", tier="pro", limiter=PLUGIN)
        + '[outbound]\nlimiter = "leaky-bucket"\npolicy = "leaky-bucket:rate=2,capacity=3"\n'
    )
    rules = load_rules(rules_file(tmp_path, text))
    assert rules.rules == (
        Rule("login", "/login", "fixed-window-lua", "fixed-window:limit=5,window=900"),
        Rule("api", "/api/*", PLUGIN, "fixed-window:limit=1,window=1", "pro"),
    )
    assert rules.outbound == Rule(OUTBOUND, "", "leaky-bucket", "leaky-bucket:rate=2,capacity=3")


def test_without_an_outbound_table_the_default_outbound_is_used(tmp_path: Path) -> None:
    assert load_rules(rules_file(tmp_path, LOGIN)).outbound == DEFAULT_OUTBOUND


def test_no_file_means_the_defaults() -> None:
    assert load_rules(None) == default_rules()


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match=r"absent\.toml: No such file"):
        load_rules(tmp_path / "absent.toml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[rule]\nname = 1", "not TOML"),
        ("", r"at least one \[\[rule\]\] table"),
        ('rule = "x"', r"at least one \[\[rule\]\] table"),
        ("rule = [1]", "rule 1 is not a table"),
        (LOGIN + "[extra]\n", "unknown table 'extra'"),
        (rule_table(colour="red"), "rule 1 has unknown field 'colour'"),
        (LOGIN + rule_table(policy="-", limiter="-"), "rule 2 needs limiter, policy"),
        (rule_table(path="-"), "rule 1 needs path"),
        (rule_table() + "tier = 3\n", "every field is a string"),
        (LOGIN + LOGIN, "rule name 'login' is empty, reserved or used twice"),
        (rule_table(name=OUTBOUND), "rule name 'outbound' is empty, reserved or used twice"),
        (rule_table(name=""), "rule name '' is empty, reserved or used twice"),
        (rule_table(tier="gold"), "tier 'gold' is not one of"),
        (rule_table(path="login"), "path 'login' must start with '/'"),
        (rule_table(path=""), "path '' must start with '/'"),
        (rule_table(limiter="nope"), "unknown limiter 'nope'"),
        (rule_table(limiter="no_such_module:f"), "cannot import 'no_such_module'"),
        (rule_table(policy="fixed-window:limit=1"), "fixed-window needs window"),
        (rule_table(policy="token-bucket:capacity=5,rate=1"), "enforces fixed-window"),
        (rule_table(limiter="leaky-bucket"), "enforces leaky-bucket"),
        (
            LOGIN
            + '[outbound]\nlimiter = "leaky-bucket"\npolicy = "token-bucket:capacity=1,rate=1"',
            "rule 'outbound': LeakyBucket enforces leaky-bucket",
        ),
        (LOGIN + '[outbound]\nlimiter = "leaky-bucket"\n', "rule outbound needs policy"),
    ],
)
def test_a_bad_rules_file_says_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(RulesError, match=message):
        load_rules(rules_file(tmp_path, text))


@pytest.mark.parametrize("limiter", sorted(CATALOGUE))
def test_every_catalogue_limiter_is_accepted_with_its_example_policy(limiter: str) -> None:
    """Every one, several limits too, but those whose windows the identity's hash shifts: load
    hands a limiter the identity prefixed with the run and the rule, so that hash is not the
    one the judge takes."""
    rule = Rule("r", "/r", limiter, CATALOGUE[limiter].policy)
    if Policy.parse(rule.policy).phase != "none":
        with pytest.raises(RulesError, match="phase=crc32 hashes the identity"):
            validated([rule], DEFAULT_OUTBOUND)
        return
    assert validated([rule], DEFAULT_OUTBOUND).rules == (rule,)


def test_a_limit_of_several_that_hashes_the_identity_is_refused() -> None:
    spec = "fixed-window:limit=2,window=10,phase=crc32 + fixed-window:limit=9,window=60"
    rule = Rule("r", "/r", "fixed-windows-lua", spec)
    with pytest.raises(RulesError, match="phase=crc32 hashes the identity"):
        validated([rule], DEFAULT_OUTBOUND)


def test_an_outbound_that_is_not_a_table(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match="outbound"):
        load_rules(rules_file(tmp_path, 'outbound = "leaky-bucket"\n' + LOGIN))


def test_the_outbound_rule_cannot_be_renamed(tmp_path: Path) -> None:
    text = LOGIN + '[outbound]\nname = "sms"\nlimiter = "leaky-bucket"\n'
    text += 'policy = "leaky-bucket:rate=2,capacity=3"\n'
    try:
        rules = load_rules(rules_file(tmp_path, text))
    except RulesError:
        return
    assert rules.outbound.name == OUTBOUND


# --- rules a service of the user's own enforces (load --service / --target) ------------------


def test_a_service_rules_file_names_no_limiter(tmp_path: Path) -> None:
    text = rule_table(
        name="api", path="/api/*", limiter="-", identity="X-Client-Id", keys="rl:api:*"
    )
    rules = load_rules(rules_file(tmp_path, text), served=True)
    (api,) = rules.rules
    assert (api.limiter, api.identity, api.keys) == (SERVICE, "X-Client-Id", "rl:api:*")
    assert rules.served
    assert rules_from_json(rules.to_json()) == rules  # the form Locust and the live judge read
    assert rules_from_json(rules.to_json()).served


def test_a_service_rule_that_names_a_limiter_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match="the service under test decides: drop the field"):
        load_rules(rules_file(tmp_path, rule_table()), served=True)


def test_the_harness_app_still_needs_a_limiter(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match="needs limiter"):
        load_rules(rules_file(tmp_path, rule_table(limiter="-")))


def test_a_service_has_one_default_rule_on_every_tier() -> None:
    rules = load_rules(None, served=True).with_default(None, "fixed-window:limit=3,window=2")
    assert [(r.name, r.path, r.limiter, r.tier) for r in rules.rules] == [
        ("api", "/api/*", SERVICE, None)
    ]
    assert rules.rules[0].policy == "fixed-window:limit=3,window=2"
    assert not default_rules().served


@pytest.mark.parametrize("header", ["", "X Client", "X-Client:1"])
def test_an_identity_that_is_no_header_name_is_refused(tmp_path: Path, header: str) -> None:
    with pytest.raises(RulesError, match="is not a header name"):
        load_rules(rules_file(tmp_path, rule_table(identity=header)))
