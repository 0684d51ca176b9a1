"""The Correctness tab of Locust's web UI, and its data as JSON at ``/correctness``.

Locust's React UI draws extra tabs from ``extended_tabs`` and ``extended_tables`` in the web
UI's template arguments, and fills them from ``extended_stats`` in each ``/stats/requests``
answer, which it polls every 2 s while a test runs; the keys must agree across the three.
One row per rule: the live verdict of the app instances' journals (``RUN_DIR/live.json``,
written by ``harness.load.judge.live``) beside what the clients saw (the view ``swarm`` hands it).
The tables of Locust's UI hold text only, so the live charts (one identity's admissions per span
against the policy, witnesses marked) are a page of their own, ``/correctness/charts``
(``charts.html``), linked from the Download Data tab.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from flask import Response, request
from locust.env import Environment

from ratelimit_harness.harness.load.contract.journals import Completions
from ratelimit_harness.harness.load.contract.rules import rules_from_json
from ratelimit_harness.harness.load.judge.client_view import ClientView

TAB = "correctness"
COLUMNS = (
    ("rule", "Rule"),
    ("limiter", "Limiter"),
    ("policy", "Policy"),
    ("decisions", "Decisions"),
    ("admitted", "Admitted"),
    ("policy_allows", "Policy allows at most"),
    ("over-admission", "Over-admission"),
    ("wrongful-rejection", "Wrongful rejection"),
    ("header_lies", "Header lies"),
    ("p50", "p50 ms"),
    ("p99", "p99 ms"),
    ("p99.9", "p99.9 ms"),
    ("max", "max ms"),
    ("witness", "First witness (seconds since the run began)"),
)


def correctness(
    run_dir: Path | None, view: ClientView, decided: Callable[[str], int] | None = None
) -> dict[str, Any]:
    """Every rule's row, and when the live verdict was last brought up to date; ``view`` is
    what the clients saw; ``decided`` counts a rule's decisions as the journals hold them now
    (fresher than the live verdict's, which is written every 2 s at best)."""
    live: dict[str, Any] = {"time": None, "rules": []}
    if run_dir is not None and (run_dir / "live.json").exists():
        live = json.loads((run_dir / "live.json").read_text())
    seen = view.to_json()
    rows = []
    for row in live["rules"]:
        rule = row["rule"]
        latency = seen["latency_ms"].get(rule, {})
        lies = seen["lies"].get(rule, {})
        if decided is not None:
            row["decisions"] = decided(rule)
        rows.append(
            row
            | {key: round(latency.get(key, 0.0), 3) for key in ("p50", "p99", "p99.9", "max")}
            | {"header_lies": sum(lies.values()) + row.get("broken_promises", 0), "lies": lies}
            | {"client_outcomes": seen["outcomes"].get(rule, {})}
        )
    return {"judged_at": live["time"], "started": live.get("started"), "rules": rows}


def add_correctness_tab(environment: Environment, view: Callable[[], ClientView]) -> None:
    """The tab, its JSON and its CSV, each read anew from the run directory and ``view()``."""
    web_ui = environment.web_ui
    if web_ui is None or web_ui.app is None:
        return
    web_ui.template_args["extended_tabs"] = [{"title": "Correctness", "key": TAB}]
    web_ui.template_args["extended_tables"] = [
        {"key": TAB, "structure": [{"key": key, "title": title} for key, title in COLUMNS]}
    ]
    web_ui.template_args["extended_csv_files"] = [
        {"href": "/correctness.csv", "title": "Download the correctness table as CSV"},
        {"href": "/correctness/charts", "title": "Live charts of the correctness view"},
    ]

    def run_dir() -> Path | None:
        options = environment.parsed_options
        return Path(options.run_dir) if options is not None and options.run_dir else None

    counters: dict[Path, Completions] = {}

    def decided(rule: str) -> int:
        options = environment.parsed_options
        where = run_dir()
        if where is None or options is None or not options.rules_json:
            return 0
        if where not in counters:
            counters[where] = Completions(where, rules_from_json(options.rules_json).decided_on)
        return counters[where].count(rule)

    def extend(response: Response) -> Response:
        if request.path == "/stats/requests" and response.is_json:
            body = response.get_json() | {
                "extended_stats": [
                    {"key": TAB, "data": correctness(run_dir(), view(), decided)["rules"]}
                ]
            }
            response.set_data(json.dumps(body))
        return response

    def as_json() -> Response:
        found = correctness(run_dir(), view(), decided)
        return Response(json.dumps(found), mimetype="application/json")

    def as_csv() -> Response:
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow([title for _, title in COLUMNS])
        for row in correctness(run_dir(), view(), decided)["rules"]:
            writer.writerow([row.get(key, "") for key, _ in COLUMNS])
        return Response(out.getvalue(), mimetype="text/csv")

    def charts() -> Response:
        page = resources.files(__package__).joinpath("charts.html").read_text()
        return Response(page, mimetype="text/html")

    web_ui.app.after_request(extend)
    web_ui.app.add_url_rule("/correctness/charts", "correctness_charts", charts)
    web_ui.app.add_url_rule("/correctness", "correctness", as_json)
    web_ui.app.add_url_rule("/correctness.csv", "correctness_csv", as_csv)
