"""Whether a response's rate-limit headers tell the truth, as a client can tell at once.

A header lie is one of:

- ``malformed``: a rate-limit header that does not parse;
- ``fields-disagree``: ``X-RateLimit-Remaining`` and ``RateLimit``'s r, or
  ``X-RateLimit-Limit`` and ``RateLimit-Policy``'s q, say different things;
- ``remaining-over-budget``: an admitted request told it has ``limit`` or more left, more than
  the policy can grant once this one counted;
- ``remaining-after-refusal``: a 429 that says budget remains;
- ``retry-after-broken``: a client alone on its identity waited ``Retry-After`` and was refused
  again (every policy here promises that budget is back by then, to a client alone on it).

- ``remaining-broken-promise``: an admitted request told more remain than the admissions
  already counted in its window leave; that needs the whole history, so the judge checks it
  after the run (``harness.load.judge.promises``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from ratelimit_harness.harness.load.contract.headers import HeaderError, parse_headers, single_quota

LIES = (
    "malformed",
    "fields-disagree",
    "remaining-over-budget",
    "remaining-after-refusal",
    "retry-after-broken",
    "remaining-broken-promise",
)


RATE_LIMIT_HEADERS = (  # by lower-case name
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "retry-after",
    "ratelimit-policy",
    "ratelimit",
)


class Reading(NamedTuple):
    """What a client made of one response's headers."""

    lies: list[str]
    retry_after: int | None  # what it advertised; None if nothing (or nothing readable)
    remaining: int | None


def response_lies(headers: Mapping[str, str], status: int) -> Reading:
    """The lies in one response's headers, and the Retry-After and Remaining it advertised."""
    return _usual_truth(headers, status) or _reading(headers, status)


def advertised_wait(headers: Mapping[str, str]) -> int | None:
    """``Retry-After`` (by its lower-case name) in whole seconds; None when absent or not a
    whole number."""
    value = headers.get("retry-after", "").strip()
    return int(value) if value.isdigit() and value.isascii() and len(value) <= 15 else None


def _reading(headers: Mapping[str, str], status: int) -> Reading:
    """``response_lies``, read the general way (``parse_headers``)."""
    try:
        told = parse_headers(headers)
    except HeaderError:
        return Reading(["malformed"], None, None)
    lies = []
    pairs = ((told.remaining, told.quota_remaining), (told.limit, told.quota))
    if any(a is not None and b is not None and a != b for a, b in pairs):
        lies.append("fields-disagree")
    remaining = told.remaining if told.remaining is not None else told.quota_remaining
    budget = told.limit if told.limit is not None else told.quota
    if status == 429 and remaining:
        lies.append("remaining-after-refusal")
    if 200 <= status < 300 and remaining is not None and budget is not None and remaining >= budget:
        lies.append("remaining-over-budget")
    return Reading(lies, told.retry_after, remaining)


USUAL = frozenset(
    (
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
        "ratelimit-policy",
        "ratelimit",
    )
)
_RATELIMIT = re.compile(r'"([ !#-\[\]-~]*)";r=([0-9]{1,15})(?:;t=[0-9]{1,15})?')


def _usual_truth(headers: Mapping[str, str], status: int) -> Reading | None:
    """The reading of the answer most often read, quickly: a 2xx with the five ``USUAL``
    headers, by lower-case name, as this harness's instances send them, telling no lie.
    None for anything else, or in doubt: then it is read the general way."""
    if not 200 <= status < 300 or headers.keys() != USUAL:
        return None
    limit, remaining = headers["x-ratelimit-limit"], headers["x-ratelimit-remaining"]
    reset = headers["x-ratelimit-reset"]
    if not all(len(v) <= 15 and v.isdigit() and v.isascii() for v in (limit, remaining, reset)):
        return None
    said = _RATELIMIT.fullmatch(headers["ratelimit"])
    policy = single_quota(headers["ratelimit-policy"])
    if said is None or policy is None or said[1] != policy[0]:
        return None
    left = int(remaining)
    if int(said[2]) != left or int(limit) != policy[1] or left >= policy[1]:
        return None  # a lie, or something like one: the general reading says which
    return Reading([], None, left)
