"""Locust glue: the user class every locustfile builds on, and the correctness plumbing.

A locustfile subclasses ``ApiUser`` and calls ``self.call(method, path, api_key=... or
client_ip=...)``; importing this module registers, through Locust's events:

- options ``--run-dir``, ``--targets``, ``--rules-json`` and ``--constant-rate`` (each
  defaulting to its ``HARNESS_LOAD_*`` variable, which ``ratelimit-harness load`` sets; Locust
  sends them on to its workers);
- in every Locust process: the client journals (``RUN_DIR/journals/client``) and a
  ``ClientView``, fed with the answers by the batch (``harness.load.traffic.answers``: only the
  journal's invoke is written on the request path); a worker sends what it saw with each
  stats report, the master merges it; a
  worker with no run directory (on a machine of its own) spools its journals and promises and
  sends them too, and the master writes them into the run directory (``shipping``);
- on the master (or the only process): the Correctness tab (``harness.load.web.tab``) and, when
  the test stops, ``RUN_DIR/client.json``.

Requests rotate over the app instances' URLs (``--targets``), request by request, as a
round-robin balancer would send them. The users rotate rather than going through a balancer
process: no extra hop to add latency or to become the bottleneck (Locust already is, at 5-7k
requests/s on two cores), and identity comes from headers, so nothing is lost by not having a
proxy in between.
"""

from __future__ import annotations

import gc
import itertools
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gevent
from locust import FastHttpUser, events
from locust.env import Environment
from locust.runners import WorkerRunner

from ratelimit_harness.harness.load.contract.env import ENV
from ratelimit_harness.harness.load.contract.headers import FAIL_HEADER
from ratelimit_harness.harness.load.contract.journals import Journals
from ratelimit_harness.harness.load.contract.rules import (
    API_KEY_HEADER,
    Rule,
    Rules,
    rules_from_json,
    tier_of,
)
from ratelimit_harness.harness.load.judge.client_view import ClientView
from ratelimit_harness.harness.load.judge.promises import PromiseLog
from ratelimit_harness.harness.load.judge.truth import advertised_wait
from ratelimit_harness.harness.load.traffic import answers, shipping
from ratelimit_harness.harness.load.traffic.answers import Answer, Answers, rate_limit_headers
from ratelimit_harness.harness.load.traffic.shipping import Spool


def _options(parser: Any) -> None:
    hidden = {"include_in_web_ui": False}  # the harness sets them; the start form need not
    parser.add_argument("--run-dir", default=os.environ.get(f"{ENV}RUN_DIR", ""), **hidden)
    parser.add_argument("--targets", default=os.environ.get(f"{ENV}TARGETS", ""), **hidden)
    parser.add_argument("--rules-json", default=os.environ.get(f"{ENV}RULES", ""), **hidden)
    parser.add_argument(
        "--constant-rate",
        type=float,
        default=float(os.environ.get(f"{ENV}CONSTANT_RATE") or 0),
        help="requests/s per user on a fixed schedule, latency from the intended send (0: off)",
        **hidden,
    )


@dataclass
class Plumbing:
    """What one Locust process needs to send, record and check requests."""

    rules: Rules
    targets: list[str]
    constant_rate: float
    view: ClientView = field(default_factory=ClientView)
    journals: Journals | None = None
    promises: PromiseLog | None = None
    spool: Spool | None = None  # a worker's records, where it has no run directory
    turn: itertools.count[int] = field(default_factory=itertools.count)
    matched: dict[tuple[str, str], Rule | None] = field(default_factory=dict)  # rule_for's
    answers: Answers = field(init=False)

    def __post_init__(self) -> None:
        self.answers = Answers(self.view, self.journals, self.promises)

    def rule_for(self, path: str, api_key: str | None) -> Rule | None:
        """The rule a request to ``path`` as ``api_key`` falls under (kept: the same few paths
        come again and again)."""
        asked = (path, tier_of(api_key))
        try:
            return self.matched[asked]
        except KeyError:
            if len(self.matched) >= MATCHES_KEPT:
                self.matched.clear()
            rule = self.matched[asked] = self.rules.match(*asked)
            return rule

    def next_target(self) -> str:
        return self.targets[next(self.turn) % len(self.targets)]

    def catch_up(self) -> None:
        """Take in the answers pending; the records held (``HOLD``), to the OS now."""
        self.answers.take_in()
        if self.journals is not None:
            self.journals.flush()
        if self.promises is not None:
            self.promises.flush()

    def keep_up(self, seconds: float) -> None:
        """``catch_up``, every ``seconds``, for ever (a greenlet's work). A failure is logged,
        and the next round goes on: the rest of the run's answers are still taken in."""
        while True:
            gevent.sleep(seconds)
            try:
                self.catch_up()
            except Exception:
                logging.getLogger(__name__).exception("taking in the answers failed")


_process: dict[str, Plumbing] = {}  # "plumbing": this process's, once built
# seconds a completion or a promise may wait in memory before its write, at most: they go
# together, not one write each (a kill turns those held into requests in flight, and
# unchecked promises); ``catch_up`` writes them sooner
HOLD = 0.25
MATCHES_KEPT = 4096  # requests' (path, tier) whose rule is kept


def plumbing(environment: Environment) -> Plumbing:
    """This process's plumbing, built on first use (a worker learns its options only when the
    master first sends it users)."""
    if "plumbing" not in _process:
        options = environment.parsed_options
        if options is None:
            raise RuntimeError("Locust has not parsed its options yet")
        targets = [url for url in options.targets.split(",") if url]
        if not targets or not options.rules_json:
            raise RuntimeError("no --targets/--rules-json: start the swarm with ratelimit-harness")
        run_dir = Path(options.run_dir) if options.run_dir else None
        spool = None
        if (run_dir is None or not run_dir.is_dir()) and isinstance(
            environment.runner, WorkerRunner
        ):  # a worker on another machine: its records go to the master
            spool = Spool()
            run_dir = spool.root
        journals, promises = None, None
        if run_dir is not None and run_dir.is_dir():
            journals = Journals(run_dir, "client", "locust", hold_for=HOLD)
            promises = PromiseLog(run_dir, hold_for=HOLD)
        rules = rules_from_json(options.rules_json)
        pipes = Plumbing(
            rules,
            targets,
            options.constant_rate,
            journals=journals,
            promises=promises,
            spool=spool,
        )
        _process["plumbing"] = pipes
        gevent.spawn(pipes.keep_up, answers.EVERY)
        # What is alive now (Locust's modules and the harness's) lives until the end: out of
        # the cyclic collector's sight, it scans only what the swarm allocates (measured on a
        # no-wait swarm: about 15 µs of the Locust process's CPU a request, of 300).
        gc.collect()
        gc.freeze()
    return _process["plumbing"]


class ApiUser(FastHttpUser):
    """A client of the API under test; subclasses say what traffic it sends."""

    abstract = True
    host = "http://127.0.0.1"  # never used: each request names the instance it goes to

    def on_start(self) -> None:
        self.pipes = plumbing(self.environment)
        self.next_send = time.time()
        self.retry_after: int | None = None  # what the last refusal advertised
        if self.pipes.constant_rate:  # the schedule paces the requests, not the pattern's waits
            self.wait_time = _no_wait  # type: ignore[method-assign]

    def call(
        self,
        method: str,
        path: str,
        *,
        api_key: str | None = None,
        client_ip: str | None = None,
        name: str | None = None,
        cost: int = 1,
        fail: bool = False,
    ) -> int:
        """Send one request to the next instance as ``api_key`` (else from ``client_ip``, else
        from this host), costing ``cost`` where its rule reads a request's cost from a header,
        and failed by the app (502) if ``fail``; journal it, and hand its answer to be timed,
        journalled and checked (``harness.load.traffic.answers``). Returns the status (0: no
        answer)."""
        pipes = self.pipes
        rule = pipes.rule_for(path, api_key)
        headers = {rule.identity if rule else API_KEY_HEADER: api_key} if api_key else {}
        if client_ip and not api_key:
            headers["X-Forwarded-For"] = client_ip
        if rule and cost != 1 and not rule.cost.isdigit():
            headers[rule.cost] = str(cost)
        if fail:
            headers[FAIL_HEADER] = "1"
        journal = pipes.journals[rule.name] if rule and pipes.journals else None
        began = self._start_time()
        identity = api_key or client_ip or "127.0.0.1"
        charged = (rule.cost_of(headers.get) or 1) if rule else 1  # as the rule will read it
        token = journal.invoke(identity, charged) if journal else None
        url = pipes.next_target() + path
        sent = time.time()
        with self.client.request(
            method, url, name=name or path, headers=headers, catch_response=True
        ) as response:
            status = int(response.status_code)
            if status == 429:
                response.success()  # a refusal is the limiter at work, not a failed request
            answered = response.headers
        received = time.time()
        self.retry_after = None
        if answered is not None and status == 429:
            self.retry_after = advertised_wait(rate_limit_headers(answered.items()))
        if rule is not None:
            told = answered.items() if answered is not None else ()
            request = f"{method} {path}"
            answer = Answer(rule, token, status, began, sent, received, identity, told, request)
            pipes.answers.add(answer)
        return status

    def call_politely(self, method: str, path: str, *, api_key: str) -> int:
        """``call``; on a 429, wait its Retry-After and call once more. A refusal then is a
        header lie, so only a user alone on its identity (``api_key``) may call this way."""
        status = self.call(method, path, api_key=api_key)
        wait = self.retry_after
        if status != 429 or wait is None:
            return status
        gevent.sleep(wait + 0.05)
        again = self.call(method, path, api_key=api_key)
        rule = self.pipes.rule_for(path, api_key)
        if again == 429 and rule is not None:
            witness = f"{method} {path} refused again {wait} s after Retry-After: {wait}"
            self.pipes.view.lie(rule.name, "retry-after-broken", witness)
        return again

    def _start_time(self) -> float:
        """When this request counts from: now, or in constant-rate mode its intended send time
        (after sleeping until it, if early), so a slow answer delays no measurement."""
        if not self.pipes.constant_rate:
            return time.time()
        intended, self.next_send = self.next_send, self.next_send + 1 / self.pipes.constant_rate
        early = intended - time.time()
        if early > 0:
            gevent.sleep(early)
        return intended


def _no_wait() -> float:
    return 0.0


_master_view = ClientView()  # the master's merge of its workers' views


def master_view() -> ClientView:
    """What the clients saw: this process's own view when it runs the users, else the merge."""
    return _process["plumbing"].view if "plumbing" in _process else _master_view


def _report(client_id: str, data: dict[str, Any]) -> None:
    if "plumbing" in _process:
        pipes = _process["plumbing"]
        pipes.catch_up()
        data["ratelimit_harness"] = pipes.view.take()
        if pipes.spool is not None:
            data[shipping.REPORT] = pipes.spool.take()


def _merge(client_id: str, data: dict[str, Any]) -> None:
    report = data.get("ratelimit_harness")
    if report:
        _master_view.merge(report)
    records, run_dir = data.get(shipping.REPORT), _master.get("run_dir")
    if records and run_dir is not None:
        shipping.receive(run_dir, client_id, records, _master["rules"])


_master: dict[str, Any] = {}  # the master's run directory and rule names, where records go


def _init(environment: Environment, **_: Any) -> None:
    options = environment.parsed_options
    if options is not None and options.run_dir and options.rules_json:
        run_dir = Path(options.run_dir)
        if run_dir.is_dir():
            _master["run_dir"] = run_dir
            _master["rules"] = rules_from_json(options.rules_json).names
    if environment.web_ui is not None:
        from ratelimit_harness.harness.load.web.tab import add_correctness_tab

        add_correctness_tab(environment, master_view)


def _on_stop(environment: Environment, **_: Any) -> None:
    if "plumbing" in _process:
        _process["plumbing"].catch_up()
    write_client_view(environment)


def _on_quit(environment: Environment, **_: Any) -> None:
    pipes = _process.get("plumbing")
    if pipes is not None:
        pipes.catch_up()
    write_client_view(environment)  # again: the workers' last reports may have come since
    spool = pipes.spool if pipes is not None else None
    if spool is not None:
        spool.remove()  # its last report has gone: the quit message sends one


def write_client_view(environment: Environment) -> None:
    """``RUN_DIR/client.json``: what the clients saw, from the master (or the only process)."""
    if isinstance(environment.runner, WorkerRunner):
        return
    options = environment.parsed_options
    run_dir = Path(options.run_dir) if options is not None and options.run_dir else None
    if run_dir is not None and run_dir.is_dir():
        partial = run_dir / "client.json.partial"
        partial.write_text(json.dumps(master_view().to_json()))
        os.replace(partial, run_dir / "client.json")


events.init_command_line_parser.add_listener(_options)
events.report_to_master.add_listener(_report)
events.worker_report.add_listener(_merge)
events.init.add_listener(_init)
events.test_stop.add_listener(_on_stop)
events.quitting.add_listener(_on_quit)
