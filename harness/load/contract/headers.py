"""Rate-limit response headers for one limiter decision, and the client's reading of them.

``X-RateLimit-Limit``, ``X-RateLimit-Remaining`` (never negative), ``X-RateLimit-Reset`` (epoch s,
rounded up), ``Retry-After`` (refusals only; seconds rounded up, >= 1 when a wait is due) and,
per draft-ietf-httpapi-ratelimit-headers-11 (23 May 2026), ``RateLimit-Policy: "rule";q=10;w=60``
and ``RateLimit: "rule";r=3;t=42``: lists of sf-string names with non-negative Integer q, w (> 0),
r and t (delta seconds, here to ``reset_at``). Since -08: same syntax; -09 barred w=0, -10 made t
the wait for more quota. -12 (20 Nov 2026) exists but its text could not be read, so is not used.
Unknowns are left out: no ``remaining``, no Remaining and no ``RateLimit`` (r is required); no
``reset_at``, no Reset and no t. A refusal says r=0. Reading takes any header case and a token
name, ignores unknown parameters and raises HeaderError on a malformed value (an HTTP-date too).

A composite policy (several limits) lists every limit in ``RateLimit-Policy``, named after the
rule and its place (``"api.1";q=10;w=1, "api.2";q=100;w=60``). ``RateLimit`` and the X- fields
describe the limit the decision names (``Decision.binding``): the one that refused, else the one
with the least room. A decision that names none gets no ``RateLimit``. A reader follows the
``RateLimit`` item with the least r (the first, on a tie), or else the first policy.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from typing import NamedTuple

from ratelimit_harness.limiters.decision import Decision
from ratelimit_harness.limiters.policy import Policy

# on an answer let through without a decision (a rule's on_error = "open", its limiter failed)
UNCHECKED_HEADER = "X-RateLimit-Unchecked"
FAIL_HEADER = "X-Fail"  # a request the app answers 502, as if what it depends on had failed

_INT = r"[0-9]{1,15}"
_STRING = r'"(?:[ !#-\[\]-~]|\\[\\"])*"'
_TOKEN = r"[A-Za-z*][A-Za-z0-9_!#$%&'*+.^`|~:/-]*"
_BARE = rf"{_STRING}|{_TOKEN}|-?{_INT}(?:\.[0-9]{{1,3}})?|:[A-Za-z0-9+/=]*:|\?[01]"
_PARAM = rf"; *([a-z*][a-z0-9_.*-]*)(?:=({_BARE}))?"
_ITEM = re.compile(rf"[ \t]*({_STRING}|{_TOKEN})((?:{_PARAM})*)[ \t]*(?P<sep>,|$)")
_FORMS = {
    name: re.compile(form)
    for name, form in dict(
        q=_INT, w="[1-9][0-9]{0,14}", r=_INT, t=_INT, qu=_STRING, pk=":[A-Za-z0-9+/=]*:"
    ).items()
}
_PARAMS = re.compile(_PARAM)
# one item named by a string without escapes, with Integer parameters only: what most servers
# send, so read without the general parser (a ``w`` from 0 is left to it, to refuse)
_ONE_ITEM = re.compile(r'[ \t]*"([ !#-\[\]-~]*)"((?:;[qrtw]=[0-9]{1,15})+)[ \t]*')
_ONE_PARAM = re.compile(r";([qrtw])=([0-9]+)")


class HeaderError(ValueError):
    """A rate-limit header value that is malformed, or a rule name no header can carry."""


class Advertised(NamedTuple):
    """What a response's headers promised, as a client reads them; None where absent."""

    policy_name: str | None
    limit: int | None  # X-RateLimit-Limit
    remaining: int | None  # X-RateLimit-Remaining
    reset_at: int | None  # X-RateLimit-Reset (epoch s)
    retry_after: int | None  # Retry-After (s)
    quota: int | None  # RateLimit-Policy q
    window: float | None  # RateLimit-Policy w
    quota_remaining: int | None  # RateLimit r
    reset_in: float | None  # RateLimit t


def quota(policy: Policy) -> tuple[int, float]:
    """(q, w): the policy's quota and window in seconds. Window kinds: (limit, window);
    buckets: (capacity, capacity / rate), the time to refill from empty."""
    if policy.limit is not None and policy.window is not None:
        return policy.limit, policy.window
    if policy.capacity is not None and policy.rate is not None:
        return policy.capacity, policy.capacity / policy.rate
    raise ValueError(f"{policy.kind} policy has neither limit and window nor capacity and rate")


def response_headers(
    rule: str, policy: Policy, decision: Decision, now: float
) -> list[tuple[str, str]]:
    """Every header for one decision of the rule named ``rule``, at server epoch time ``now``."""
    if not re.fullmatch(r"[ -~]*", rule):
        raise HeaderError(f"rule name {rule!r} is not printable ASCII, so no sf-string holds it")
    limits = policy.limits or (policy,)
    names = [rule] if len(limits) == 1 else [f"{rule}.{n}" for n in range(1, len(limits) + 1)]
    quotas = [quota(limit) for limit in limits]
    listed = ", ".join(
        f"{_string(n)};q={q};w={max(1, _up(w))}" for n, (q, w) in zip(names, quotas, strict=True)
    )
    binding = 0 if len(limits) == 1 else decision.binding
    if type(binding) is not int or not 0 <= binding < len(limits):
        binding = None  # a composite's decision that names no limit (or junk from a plug-in)
    name = None if binding is None else _string(names[binding])
    q = None if binding is None else quotas[binding][0]
    known = decision.remaining
    remaining = None if known is None else max(0, known) if decision.allowed else 0
    reset_in = None if decision.reset_at is None else decision.reset_at - now
    wait = decision.retry_after if decision.retry_after is not None else reset_in
    t = "" if reset_in is None else f";t={_up(reset_in)}"
    values = {
        "X-RateLimit-Limit": decision.limit if decision.limit is not None else q,
        "X-RateLimit-Remaining": remaining,
        "X-RateLimit-Reset": None if decision.reset_at is None else _up(decision.reset_at),
        "Retry-After": None if decision.allowed or wait is None else max(int(wait > 0), _up(wait)),
        "RateLimit-Policy": listed,
        "RateLimit": None if remaining is None or name is None else f"{name};r={remaining}{t}",
    }
    return [(header, str(value)) for header, value in values.items() if value is not None]


def _string(text: str) -> str:
    """``text`` as an sf-string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def parse_headers(headers: Mapping[str, str]) -> Advertised:
    """Read the headers above from a response, whatever the case of their names."""
    found = {key.lower(): value.strip() for key, value in headers.items()}
    policies = _items(found.get("ratelimit-policy"), "RateLimit-Policy")
    limits = _items(found.get("ratelimit"), "RateLimit")
    if len(limits) > 1:
        name = min(limits, key=lambda n: limits[n].get("r", math.inf))
    else:
        name = next(iter(limits or policies), None)
    if name is not None and policies and name not in policies:
        raise HeaderError(f"RateLimit names {name!r}, which RateLimit-Policy has no item for")
    policy, limit = policies.get(name, {}), limits.get(name, {})
    if (policies and "q" not in policy) or (limits and "r" not in limit):
        raise HeaderError(f"policy {name!r} lacks q in RateLimit-Policy or r in RateLimit")
    w, t = policy.get("w"), limit.get("t")
    return Advertised(
        policy_name=name,
        limit=_integer(found, "x-ratelimit-limit"),
        remaining=_integer(found, "x-ratelimit-remaining"),
        reset_at=_integer(found, "x-ratelimit-reset"),
        retry_after=_integer(found, "retry-after"),
        quota=policy.get("q"),
        window=None if w is None else float(w),
        quota_remaining=limit.get("r"),
        reset_in=None if t is None else float(t),
    )


def _up(seconds: float) -> int:
    """Whole seconds rounded up, past the float noise of epoch arithmetic; never negative."""
    return max(0, math.ceil(round(seconds, 6)))


def _integer(found: Mapping[str, str], key: str) -> int | None:
    value = found.get(key)
    if value is None:
        return None
    if not (value.isdigit() and value.isascii() and len(value) <= 15):  # _INT, without a regex
        raise HeaderError(f"{key} must be a non-negative integer, got {value!r}")
    return int(value)


def single_quota(value: str) -> tuple[str, int] | None:
    """The name and q of a ``RateLimit-Policy`` value of one item with q, or None."""
    try:
        items = _parsed_items(value, "RateLimit-Policy")
    except HeaderError:
        return None
    if len(items) != 1:
        return None
    [(name, params)] = items.items()
    q = params.get("q")
    return None if name is None or q is None else (name, q)


def _items(value: str | None, field: str) -> Mapping[str | None, Mapping[str, int]]:
    """A Structured Field list of named items: name -> its Integer parameters q, w, r, t."""
    return {} if value is None else _parsed_items(value, field)


@functools.lru_cache(maxsize=4096)
def _parsed_items(value: str, field: str) -> Mapping[str | None, Mapping[str, int]]:
    """``_items`` of a header's value, kept: a swarm reads the same few values again and again
    (``RateLimit-Policy`` is one per rule), so most are parsed once. Read only."""
    return _one_item(value) or _listed_items(value, field)


def _one_item(value: str) -> dict[str | None, dict[str, int]] | None:
    """``_items`` of a value of one item in the shape most servers send (``_ONE_ITEM``), read
    quickly; None for any other."""
    one = _ONE_ITEM.fullmatch(value)
    if one is None or ";w=0" in one[2]:
        return None
    return {one[1]: {key: int(number) for key, number in _ONE_PARAM.findall(one[2])}}


def _listed_items(value: str, field: str) -> dict[str | None, dict[str, int]]:
    """``_items``, read the general way."""
    items: dict[str | None, dict[str, int]] = {}
    pos = 0
    while pos < len(value):
        match = _ITEM.match(value, pos)
        if not match or (match["sep"] == "," and match.end() == len(value)):
            raise HeaderError(f"{field} is not a list of named items: {value!r}")
        params = dict(_PARAMS.findall(match[2]))
        for key, form in _FORMS.items():
            if key in params and not form.fullmatch(params[key]):
                raise HeaderError(f"{field} {key}={params[key]!r} is not of the draft's type")
        bare = match[1]
        name = re.sub(r"\\(.)", r"\1", bare[1:-1]) if bare.startswith('"') else bare
        items[name] = {key: int(v) for key, v in params.items() if key in ("q", "w", "r", "t")}
        pos = match.end()
    if not items:
        raise HeaderError(f"{field} is empty")
    return items
