"""A seeded synthetic workload of many sources: heavy-tailed rates and bursts.

Each source has a mean rate, in requests per window, drawn from a Pareto law (most sources
send a few requests a window, a few send far more than any limit), and sends its requests in
bursts (a page load, a retry loop, a script): bursts start at random instants over the
horizon, hold a geometric number of requests (each source its own mean size, from 1 to 20),
spaced by exponential gaps of 0.2 s on average. Instants are whole microseconds, as the
server-time scripts see them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

START = 1_800_000_000.0  # on a window edge


@dataclass(frozen=True)
class Workload:
    sources: int
    windows: int  # the horizon, in windows
    window: float = 60.0
    seed: int = 1
    pareto_shape: float = 1.1  # the tail: P(rate > x) ~ x ** -shape
    typical_rate: float = 3.0  # requests per window of the least busy sources
    top_rate: float = 2000.0  # no source sends more than this a window
    burst_gap: float = 0.2  # seconds between the requests of a burst, on average

    def sources_arrivals(self) -> Iterator[list[float]]:
        """Each source's request instants (seconds, sorted), source after source."""
        draw = np.random.default_rng(self.seed)
        horizon = self.windows * self.window
        for _ in range(self.sources):
            rate = min(self.top_rate, self.typical_rate * (1 + draw.pareto(self.pareto_shape)))
            burst = float(np.exp(draw.uniform(0, np.log(20))))  # mean requests in a burst
            bursts = draw.poisson(rate * self.windows / burst)
            starts = draw.uniform(0, horizon, bursts)
            sizes = draw.geometric(1 / burst, bursts)
            times = np.repeat(starts, sizes) + self._offsets(draw, sizes)
            times = np.round(np.sort(times[times < horizon]) * 1e6) / 1e6
            yield (START + times).tolist()

    def _offsets(self, draw: np.random.Generator, sizes: np.ndarray) -> np.ndarray:
        """Each request's time after the start of its burst: 0 for the first."""
        gaps = draw.exponential(self.burst_gap, int(sizes.sum()))
        firsts = np.cumsum(sizes) - sizes
        gaps[firsts] = 0.0  # a geometric size is at least 1
        elapsed = np.cumsum(gaps)
        offsets: np.ndarray = elapsed - np.repeat(elapsed[firsts], sizes)
        return offsets

    def describe(self) -> dict[str, object]:
        return {
            "sources": self.sources,
            "windows": self.windows,
            "window_seconds": self.window,
            "seed": self.seed,
            "rates": f"Pareto, shape {self.pareto_shape}, from {self.typical_rate:g} per window, "
            f"at most {self.top_rate:g}",
            "bursts": f"geometric sizes, each source's mean from 1 to 20; gaps of "
            f"{self.burst_gap:g} s on average",
        }
