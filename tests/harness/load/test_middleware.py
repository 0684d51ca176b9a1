"""Which rule holds a request, and whose request it is."""

from __future__ import annotations

from typing import Any

import pytest

from harness.load.middleware import held_by
from harness.load.rules import DEFAULT_OUTBOUND, Rule, validated

POLICY = "fixed-window:limit=1,window=1"
RULES = validated(
    [
        Rule("partners", "/partner/*", "fixed-window-lua", POLICY, identity="X-Partner"),
        Rule("api-pro", "/api/*", "fixed-window-lua", POLICY, tier="pro"),
        Rule("api", "/api/*", "fixed-window-lua", POLICY),
    ],
    DEFAULT_OUTBOUND,
)


def scope(path: str, peer: str = "127.0.0.1", **headers: str) -> dict[str, Any]:
    raw = [(k.replace("_", "-").lower().encode(), v.encode()) for k, v in headers.items()]
    return {"type": "http", "path": path, "headers": raw, "client": (peer, 5000)}


@pytest.mark.parametrize(
    ("request_scope", "expected"),
    [
        (scope("/api/x", x_api_key="team-1"), ("api", "team-1")),
        (scope("/api/x", x_api_key="pro-1"), ("api-pro", "pro-1")),
        (scope("/partner/x", x_partner="acme"), ("partners", "acme")),
        # the partners' rule reads its own header: X-API-Key means nothing to it
        (scope("/partner/x", x_api_key="team-1"), ("partners", "127.0.0.1")),
        (scope("/partner/x", x_partner="pro-acme"), ("partners", "pro-acme")),
        (scope("/api/x", x_forwarded_for="10.0.0.7, 127.0.0.1"), ("api", "10.0.0.7")),
        # a forwarded address is believed only from a peer on loopback
        (scope("/api/x", "192.0.2.1", x_forwarded_for="10.0.0.7"), ("api", "192.0.2.1")),
    ],
)
def test_each_rule_reads_the_identity_from_its_own_header(
    request_scope: dict[str, Any], expected: tuple[str, str]
) -> None:
    held = held_by(RULES, request_scope)
    assert held is not None
    rule, identity = held
    assert (rule.name, identity) == expected


def test_a_request_no_rule_holds() -> None:
    assert held_by(RULES, scope("/healthz", x_api_key="team-1")) is None
