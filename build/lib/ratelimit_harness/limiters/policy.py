"""Rate-limit policies: what a limiter promises, written as a one-line spec.

A spec is ``kind:name=value,...``, e.g. ``fixed-window:limit=5,window=2`` or
``token-bucket:capacity=5,rate=2.5``. Windows are in seconds, rates per second.

A fixed window also takes ``anchor``: ``aligned`` (the default: windows at multiples of the
window, from the epoch) or ``first`` (a window starts at the first admission after the one
before it ended, as a key's TTL does: what most released fixed-window limiters do).

An aligned fixed window also takes ``phase``: ``none`` (the default: every identity's windows
start at the same instants) or ``crc32`` (each identity's windows are shifted by a hash of the
identity, so that not every identity's count turns at once: django-ratelimit's windows). With
``crc32``, an identity's windows start at the whole seconds s where s - 1 is crc32(identity)
modulo the window (``Policy.origin``).

A fixed window and a sliding window also take ``count``: ``admissions`` (the default: a refused
request is not counted) or ``attempts`` (every request is counted, refused or not, as a limiter
that counts before it decides does: it refuses once its window holds ``limit`` attempts).

A fixed window also takes ``block``, in seconds, a window at least: once a request is refused
outside a block (its window is full), the identity is refused for ``block`` seconds from then,
and then has a fresh budget (``blockDuration`` in rate-limiter-flexible and NestJS' throttler
storages).

A composite policy joins several with ``+``: ``fixed-window:limit=10,window=1 +
fixed-window:limit=1000,window=3600`` admits a request only if every one of its limits has room.
Its limits may be of any kinds, mixed.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, fields

# kind -> the parameters it takes, in the order they are printed
KINDS: dict[str, tuple[str, ...]] = {
    "fixed-window": ("limit", "window"),
    "sliding-window": ("limit", "window"),
    "sliding-counter": ("limit", "window"),
    "token-bucket": ("capacity", "rate"),
    "gcra": ("capacity", "rate"),
    "leaky-bucket": ("rate", "capacity"),
}
_INTEGER_PARAMS = {"limit", "capacity"}
# kind -> the numbers it may take besides its own, printed after them when given
OPTIONAL: dict[str, tuple[str, ...]] = {"fixed-window": ("block",)}
# kind -> its options, each a word out of a few, the first the default (printed only when not)
COUNTS = ("admissions", "attempts")  # what a window counts: see the module's text
OPTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "fixed-window": {"anchor": ("aligned", "first"), "phase": ("none", "crc32"), "count": COUNTS},
    "sliding-window": {"count": COUNTS},
}
JUDGED_ALIKE = ("count",)  # options a checker reads itself, left out of a promise
FIRST_ANCHORED = "fixed-window:anchor=first"  # the promise of a window started by an admission
COMPOSITE, JOIN = "composite", " + "  # several limits at once, and how a spec joins them


class PolicyError(ValueError):
    """A policy spec that cannot be parsed, or a policy a limiter cannot enforce."""


@dataclass(frozen=True, slots=True)
class Policy:
    """A parsed policy. Parameters a kind does not take are None."""

    kind: str
    limit: int | None = None
    window: float | None = None
    capacity: int | None = None
    rate: float | None = None
    anchor: str = "aligned"  # fixed-window: "aligned" or "first"
    phase: str = "none"  # fixed-window, aligned: "none" or "crc32" (each identity's own)
    count: str = "admissions"  # fixed-window, sliding-window: "admissions" or "attempts"
    block: float | None = None  # fixed-window: seconds an identity is refused once over
    limits: tuple[Policy, ...] = ()  # a composite's (kind COMPOSITE): each one must have room

    @property
    def promise(self) -> str:
        """What a limiter enforces and a checker judges: the kind, with the options that are
        not their default (``fixed-window:anchor=first``); a composite's, joined by `` + ``."""
        if self.limits:
            return JOIN.join(limit.promise for limit in self.limits)
        options = self._options(leaving_out=JUDGED_ALIKE)
        return f"{self.kind}:{options}" if options else self.kind

    @classmethod
    def composite(cls, limits: tuple[Policy, ...]) -> Policy:
        """The policy that holds when every one of ``limits`` does."""
        if len(limits) < 2 or any(limit.limits for limit in limits):
            raise PolicyError("a composite policy joins two or more single policies")
        return cls(COMPOSITE, limits=limits)

    @classmethod
    def parse(cls, spec: str) -> Policy:
        if "+" in spec:
            parts = spec.split("+")
            if not all(part.strip() for part in parts):
                raise PolicyError(f"expected a policy on each side of '+' in {spec!r}")
            return cls.composite(tuple(cls._parse_one(part.strip()) for part in parts))
        return cls._parse_one(spec)

    @classmethod
    def _parse_one(cls, spec: str) -> Policy:
        kind, sep, rest = spec.strip().partition(":")
        if kind not in KINDS:
            raise PolicyError(
                f"unknown policy kind {kind!r} in {spec!r}; known: {', '.join(KINDS)}"
            )
        expected, options, optional = KINDS[kind], OPTIONS.get(kind, {}), OPTIONAL.get(kind, ())
        values: dict[str, float | int] = {}
        chosen: dict[str, str] = {}
        for item in rest.split(",") if sep and rest.strip() else []:
            name, eq, text = (part.strip() for part in item.partition("="))
            if not eq:
                raise PolicyError(f"expected name=value, got {item.strip()!r} in {spec!r}")
            if name not in (*expected, *optional, *options):
                takes = ", ".join((*expected, *optional, *options))
                raise PolicyError(f"{kind} takes {takes}; got {name!r} in {spec!r}")
            if name in values or name in chosen:
                raise PolicyError(f"{name} given twice in {spec!r}")
            if name in options:
                chosen[name] = _choice(name, text, options[name], spec)
            else:
                values[name] = _number(name, text, spec)
        missing = [name for name in expected if name not in values]
        if missing:
            raise PolicyError(f"{kind} needs {', '.join(missing)} in {spec!r}")
        if chosen.get("anchor") == "first" and chosen.get("phase", "none") != "none":
            raise PolicyError(f"a phase shifts aligned windows only, not anchor=first: {spec!r}")
        if values.get("block", math.inf) < values.get("window", 0):
            raise PolicyError(f"a block lasts a window at least, got {spec!r}")
        return cls(kind=kind, **values, **chosen)  # type: ignore[arg-type]

    def __str__(self) -> str:
        if self.limits:
            return JOIN.join(map(str, self.limits))
        return f"{self.kind}:{self._joined(_format)}"

    def exact_params(self) -> str:
        """``name=value,...`` with every value exact (``str`` rounds to six digits), then the
        options not at their default: what a limiter's keys carry, so two policies of one kind
        never name one key. A composite's limits each give theirs, with their kind, joined."""
        if self.limits:
            return "+".join(f"{limit.kind}:{limit.exact_params()}" for limit in self.limits)
        return self._joined(_exact)

    def _joined(self, form: Callable[[float | int | None], str]) -> str:
        named = [*KINDS[self.kind], *(n for n in OPTIONAL.get(self.kind, ()) if getattr(self, n))]
        numbers = [f"{name}={form(getattr(self, name))}" for name in named]
        return ",".join(filter(None, [*numbers, self._options()]))

    def _options(self, leaving_out: tuple[str, ...] = ()) -> str:
        """``name=word,...`` for the options not at their default ('' when all are)."""
        options = OPTIONS.get(self.kind, {})
        return ",".join(
            f"{name}={getattr(self, name)}"
            for name, words in options.items()
            if getattr(self, name) != words[0] and name not in leaving_out
        )

    def params(self) -> dict[str, float | int]:
        """The parameters this policy's kind takes, by name (none for a composite)."""
        takes = KINDS.get(self.kind, ())
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name in takes}

    def origin(self, identity: str) -> float:
        """Where ``identity``'s aligned windows start, past each multiple of the window: 0, or
        with ``phase=crc32``, (crc32(identity) + 1) modulo the window, in seconds."""
        if self.phase == "none" or self.window is None:
            return 0.0
        return (zlib.crc32(identity.encode()) + 1) % self.window

    def longest_need(self) -> float:
        """The longest a limiter ever needs to keep an identity's state, in seconds: what a
        window looks back over (two windows for the sliding counter), or the time a drained
        bucket takes to fill again."""
        if self.limits:
            return max(limit.longest_need() for limit in self.limits)
        if self.window is not None:
            return self.window * (2 if self.kind == "sliding-counter" else 1) + (self.block or 0)
        return (self.capacity or 1) / (self.rate or math.inf)


def _number(name: str, text: str, spec: str) -> float | int:
    try:
        value = int(text) if name in _INTEGER_PARAMS else float(text)
    except ValueError:
        kind = "a whole number" if name in _INTEGER_PARAMS else "a number"
        raise PolicyError(f"{name} must be {kind}, got {text!r} in {spec!r}") from None
    if not value > 0 or value == float("inf"):
        raise PolicyError(f"{name} must be positive and finite, got {text!r} in {spec!r}")
    return value


def _choice(name: str, text: str, words: tuple[str, ...], spec: str) -> str:
    if text not in words:
        raise PolicyError(f"{name} must be {' or '.join(words)}, got {text!r} in {spec!r}")
    return text


def _format(value: float | int | None) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _exact(value: float | int | None) -> str:
    """``_format`` where it loses nothing (``2``, ``2.5``), else every digit."""
    text = _format(value)
    return text if value is None or float(text) == value else repr(value)
