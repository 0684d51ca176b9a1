"""Latency without loss: one HdrHistogram per rule, in microseconds, mergeable across processes.

Locust's own statistics round response times into buckets; an HdrHistogram keeps every value to
3 significant digits from 1 µs to 60 s, records in about a microsecond, and encodes to a few kB,
so each worker sends what it recorded since its last report and the master adds them up.
"""

from __future__ import annotations

from typing import Any

from hdrh.histogram import HdrHistogram

LOWEST_US, HIGHEST_US, DIGITS = 1, 60_000_000, 3
PERCENTILES = (50, 90, 99, 99.9)


def _histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, DIGITS)


class Latencies:
    """Histograms by name (a rule): ``record`` seconds, ``encode`` to send, ``merge`` received."""

    def __init__(self) -> None:
        self.histograms: dict[str, HdrHistogram] = {}

    def record(self, name: str, seconds: float) -> None:
        histogram = self.histograms.get(name)
        if histogram is None:
            histogram = self.histograms[name] = _histogram()
        histogram.record_value(min(HIGHEST_US, max(LOWEST_US, round(seconds * 1e6))))

    def encode(self) -> dict[str, str]:
        return {name: h.encode().decode("ascii") for name, h in self.histograms.items()}

    def merge(self, encoded: dict[str, str]) -> None:
        for name, text in encoded.items():
            histogram = self.histograms.get(name)
            if histogram is None:
                histogram = self.histograms[name] = _histogram()
            histogram.decode_and_add(text)

    def summary(self, name: str) -> dict[str, Any]:
        """Count, the percentiles and the max, in milliseconds (zeros with no data)."""
        histogram = self.histograms.get(name)
        if histogram is None or not histogram.get_total_count():
            return {"count": 0} | {f"p{p:g}": 0.0 for p in PERCENTILES} | {"max": 0.0}
        return (
            {"count": histogram.get_total_count()}
            | {f"p{p:g}": histogram.get_value_at_percentile(p) / 1000 for p in PERCENTILES}
            | {"max": histogram.get_max_value() / 1000}
        )
