"""The study's report (``ratelimit-harness study``): the chapter's Part 10 table with the
numbers measured beside each claim, the details behind them, and ``memory.png`` (bytes per
identity against requests per window, log-log). Reads ``study.json``, and the verdicts of the
histories the study judged (``history/MEASUREMENT/LIMITER.verdict.json``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from ratelimit_harness.harness.history.verdict import Verdict
from ratelimit_harness.reports import html, markdown
from ratelimit_harness.reports.figures import save
from ratelimit_harness.reports.tables import Finding, Report, Table

CHAPTER_BYTES_PER_ENTRY = (20, 40)  # Part 3: "Each entry = 20-40 bytes -> ~40MB"
CLOUDFLARE = "0.003 % of 400 million requests from 270,000 sources"
JUDGED, VERDICT = "history", ".verdict.json"


def read(directory: Path) -> dict[str, Any]:
    path = directory / "study.json"
    try:
        study: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ValueError(f"{path}: not a study's result ({error})") from None
    if study.get("kind") != "study":
        raise ValueError(f"{path}: not a study's result")
    return study


def build(directory: Path, out: Path) -> list[Path]:
    study = read(directory)
    report = Report(
        f"The chapter's table, measured: {directory.name}",
        headline(study),
        table(study),
        findings(study) + judged_findings(judged(directory)),
        findings_title="How each number was measured",
    )
    plot = memory_plot(study, out / "memory.png")
    return [
        markdown.write(out / "summary.md", report),
        plot,
        html.write(out / "report.html", report, [plot]),
    ]


def headline(study: dict[str, Any]) -> str:
    one, many = _sorted_sets(study)
    counter = study["accuracy"]["against_exact"]["sliding-counter"]
    redis = study["redis"]
    return (
        f"Measured on Redis {redis['version']} ({redis['how']}) in {study['seconds']:.0f} s"
        f"{' (--quick sizes)' if study['sizes']['entries'] < 1_000_000 else ''}. "
        f"{one} {many} The sliding-window counter decided {_pct(counter['wrong_share'])} of "
        f"{counter['requests']:,} requests from {counter['sources']:,} sources otherwise than "
        f"the exact sliding window (Cloudflare: {CLOUDFLARE})."
    )


def table(study: dict[str, Any]) -> Table:
    rates = study["sizes"]["rates"]
    bursts = study["bursts"]
    n, gap = bursts["requests"], bursts["edge_gap_seconds"]
    headers = [
        "algorithm (chapter)",
        "limiter",
        "memory: chapter",
        f"bytes per identity at {' / '.join(map(str, rates))} requests a window",
        "accuracy: chapter",
        "measured against the exact sliding window",
        "burst: chapter",
        f"{n} requests at once: admitted",
        f"{n} a {gap:g} s before and {n} a {gap:g} s after a window edge: admitted",
        "round trips / commands / server µs per decision",
    ]
    rows = []
    for claim in study["chapter"]:
        name = claim["limiter"]
        burst = bursts["limiters"][name]
        cost = study["cost"]["limiters"][name]["admitted"]
        rows.append(
            [
                claim["algorithm"],
                name,
                claim["memory"],
                _memory_cell(study["memory"]["per_identity"][name]),
                claim["accuracy"],
                _accuracy_cell(study, name),
                claim["burst"],
                _burst_cell(burst["burst"]),
                f"{burst['edge_total']} ({burst['edge_before']['admitted']} + "
                f"{burst['edge_after']['admitted']})",
                f"{cost['round_trips']:g} / {cost['commands_run']:g} / {cost['server_usec']:.1f}",
            ]
        )
    return Table(headers, rows)


def findings(study: dict[str, Any]) -> list[Finding]:
    return [
        Finding("Memory per identity (MEMORY USAGE, SAMPLES 0)", _memory_text(study)),
        Finding("1 million sorted-set entries: about 40 MB?", " ".join(_sorted_sets(study))),
        Finding("Accuracy of the sliding-window counter", _accuracy_text(study)),
        Finding("Bursts", _bursts_text(study)),
        Finding("Cost per decision (INFO commandstats)", _cost_text(study)),
        Finding("The chapter's footnote", study["footnote"]),
    ]


def judged(directory: Path) -> dict[str, Verdict]:
    """The verdict of each history the study kept, by name (``MEASUREMENT/LIMITER``)."""
    found = {}
    for path in sorted((directory / JUDGED).rglob(f"*{VERDICT}")):
        name = path.relative_to(directory / JUDGED).as_posix().removesuffix(VERDICT)
        try:
            found[name] = Verdict.from_json(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{path}: not a verdict ({error})") from None
    return found


def judged_findings(verdicts: dict[str, Verdict]) -> list[Finding]:
    """What the checkers found in the decisions the study made on Redis, as they recorded it
    (none for a study that kept no history)."""
    if not verdicts:
        return []
    measurements: dict[str, list[Verdict]] = {}
    for name, found in verdicts.items():
        measurements.setdefault(name.split("/")[0], []).append(found)
    decisions = sum(v.operations for v in verdicts.values())
    wrong = [
        f"  {name} ({v.policy}): "
        + ", ".join(f"{x.kind} {x.count:,}" for x in v.violations if x.count)
        for name, v in verdicts.items()
        if not v.valid
    ]
    lines = [
        f"{len(verdicts)} histories, {decisions:,} decisions, each judged by the checkers under "
        f"the policy of its limiter and kept in {JUDGED}/ (ratelimit-harness check RUN_DIR "
        f"judges them again): {len(wrong) or 'none'} with a violation.",
        "Histories (decisions) by measurement: "
        + ", ".join(
            f"{m} {len(vs)} ({sum(v.operations for v in vs):,})" for m, vs in measurements.items()
        ),
        *wrong,
    ]
    return [Finding("Every decision made on Redis, judged", "\n".join(lines))]


def memory_plot(study: dict[str, Any], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(9, 5.2))
    per_identity = study["memory"]["per_identity"]
    # lines that lie on one another (equal sizes) stay visible: each its own marker and dash,
    # the later ones smaller
    styles = zip("osD^vx", ["-", "--", "-.", ":", "--", "-"], range(11, 0, -1), strict=False)
    for claim, (marker, dash, size) in zip(study["chapter"], styles, strict=False):
        rows = per_identity[claim["limiter"]]
        xs, ys = [r["requests"] for r in rows], [r["bytes"] for r in rows]
        label = f"{claim['limiter']} ({claim['algorithm']}): {ys[0]:,}-{ys[-1]:,} B"
        ax.plot(xs, ys, marker=marker, ls=dash, ms=size, lw=1.6, label=label)
    rates = study["sizes"]["rates"]
    low, high = CHAPTER_BYTES_PER_ENTRY
    ax.fill_between(
        rates,
        [low * r for r in rates],
        [high * r for r in rates],
        color="#999999",
        alpha=0.25,
        label=f"the chapter's sliding log: {low}-{high} bytes per entry",
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("requests from one identity in one window (log scale)")
    ax.set_ylabel("memory per identity (bytes, MEMORY USAGE, log scale)")
    ax.set_title("Memory per identity as its requests in a window rise")
    ax.grid(True, which="major", color="#dddddd")
    ax.legend(loc="upper left", fontsize=8)
    return save(fig, path)


def _memory_cell(rows: list[dict[str, Any]]) -> str:
    sizes = [r["bytes"] for r in rows]
    growth = sizes[-1] / sizes[0]
    trend = "flat: O(1)" if growth < 2 else f"x{growth:,.0f}: O(requests)"
    return f"{' / '.join(f'{b:,}' for b in sizes)} ({trend})"


def _accuracy_cell(study: dict[str, Any], name: str) -> str:
    kinds = {"sliding-counter-lua": "sliding-counter", "fixed-window-lua": "fixed-window"}
    if name == "sliding-log-lua":
        return "the yardstick itself"
    if name not in kinds:
        return "another policy: a bucket, not a window"
    t = study["accuracy"]["against_exact"][kinds[name]]
    return (
        f"{_pct(t['wrongly_allowed_share'])} wrongly allowed, "
        f"{_pct(t['wrongly_limited_share'])} wrongly limited; "
        f"net {_pct(t['net_excess_share'], sign=True)} admitted"
    )


def _burst_cell(burst: dict[str, Any]) -> str:
    if burst["at_once"] == burst["admitted"]:
        return str(burst["admitted"])
    return (
        f"{burst['admitted']} queued: {burst['at_once']} at once, the last waits "
        f"{burst['longest_wait']:.1f} s"
    )


def _sorted_sets(study: dict[str, Any]) -> tuple[str, str]:
    found = study["memory"]["sorted_set"]
    one, many, entries = found["one_set"], found["sets"], found["entries"]
    sets = entries // found["per_set"]
    return (
        f"{entries:,} sliding-log entries took {_mb(one['memory_usage_bytes'])} as one sorted set "
        f"({one['bytes_per_entry']:.0f} bytes each, {one['encoding']}; used_memory grew "
        f"{_mb(one['used_memory_growth_bytes'])}) and {_mb(many['memory_usage_bytes'])} as "
        f"{sets:,} sets of {found['per_set']} ({many['bytes_per_entry']:.0f} bytes each, "
        f"{many['encoding']}; used_memory grew {_mb(many['used_memory_growth_bytes'])}),",
        "against the chapter's ~40 MB for 1 million (20-40 bytes each).",
    )


def _memory_text(study: dict[str, Any]) -> str:
    lines = ["Bytes one identity holds after N requests in one window (all admitted):"]
    for name, rows in study["memory"]["per_identity"].items():
        cells = ", ".join(f"{r['requests']}: {r['bytes']:,} B in {r['keys']} key" for r in rows)
        lines.append(f"  {name}: {cells}")
    return "\n".join(lines)


def _accuracy_text(study: dict[str, Any]) -> str:
    found = study["accuracy"]
    w, redis = found["workload"], found["on_redis"]
    lines = [
        f"Workload: {w['sources']:,} sources over {w['windows']} windows of "
        f"{w['window_seconds']:g} s (seed {w['seed']}); rates {w['rates']}; bursts: {w['bursts']}.",
        f"Policy: {found['policy']['limit']} per {found['policy']['window']:g} s. Decisions by "
        "the reference models; each policy counts what it admitted.",
    ]
    for kind, t in found["against_exact"].items():
        lines.append(
            f"{kind}: {t['wrongly_allowed']:,} wrongly allowed and {t['wrongly_limited']:,} "
            f"wrongly limited of {t['requests']:,} ({_pct(t['wrong_share'])}); "
            f"{t['sources_limited_exact']:,} of {t['sources']:,} sources reach the limit and "
            f"send {t['requests_of_those']:,} requests, of which "
            f"{_pct(t['wrong_share_of_limited_sources'])} are decided otherwise; sources limited "
            f"only by the exact window: {t['sources_only_exact_limited']}, only by {kind}: "
            f"{t['sources_only_limited']}; admitted {t['allowed']:,} against "
            f"{t['exact_allowed']:,} ({_pct(t['net_excess_share'], sign=True)} of all)."
        )
    disagreed = ", ".join(f"{k}: {v}" for k, v in redis["disagreements"].items())
    lines.append(
        f"On Redis: the first {redis['sources']} sources through the Lua limiters too, "
        f"{redis['decisions']:,} decisions; unlike the models' ({disagreed})."
    )
    lines.append(f"Cloudflare published {CLOUDFLARE} wrongly allowed or limited.")
    return "\n".join(lines)


def _bursts_text(study: dict[str, Any]) -> str:
    found = study["bursts"]
    lines = [
        f"Each limiter allows 100 a minute; {found['requests']} requests at one instant of an "
        f"idle identity, then {found['requests']} {found['edge_gap_seconds']:g} s before and "
        "after a window edge on another identity."
    ]
    for name, row in found["limiters"].items():
        lines.append(
            f"  {name} ({row['policy']}): burst {_burst_cell(row['burst'])}; at the edge "
            f"{_burst_cell(row['edge_before'])} + {_burst_cell(row['edge_after'])}"
        )
    return "\n".join(lines)


def _cost_text(study: dict[str, Any]) -> str:
    found = study["cost"]
    reset = "reset first (CONFIG RESETSTAT)" if found["reset_stats"] else "read before and after"
    lines = [f"{found['decisions']:,} decisions a phase; the server's statistics {reset}."]
    for name, phases in found["limiters"].items():
        for phase, c in phases.items():
            commands = ", ".join(f"{k} {v:g}" for k, v in c["commands"].items())
            lines.append(
                f"  {name}, {phase} ({c['admitted']:,} admitted): {c['round_trips']:g} round "
                f"trips, {c['commands_run']:g} commands ({commands}), {c['server_usec']:.1f} µs "
                f"on the server, {c['client_usec_p50']:.0f} µs at the client (median)"
            )
    return "\n".join(lines)


def _pct(share: float, sign: bool = False) -> str:
    return f"{100 * share:{'+' if sign else ''}.3f} %"


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"
