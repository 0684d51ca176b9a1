"""A Redis in a Docker container, through testcontainers.

Host networking, bound to 127.0.0.1 on a free port (the engine may have no bridge). The image
is ``$REDIS_IMAGE`` or a pinned official tag; where no registry answers, build one locally with
``make redis-image``. Ryuk is disabled when its image is not present, so we remove our own
containers: on stop, at exit, and on the next start for those a killed run left behind (found by
label, owned by a process that no longer exists).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

from ratelimit_harness.harness.provision.base import (
    RedisServer,
    Unavailable,
    free_port,
    server_args,
    shutdown_nosave,
    wait_until_ready,
)

DEFAULT_IMAGE = "redis:7.4.1"
LOCAL_IMAGE = "ratelimit-harness/redis:local"  # what `make redis-image` builds
LABEL = "ratelimit-harness"
OWNER_LABEL = f"{LABEL}.owner"  # "hostname:pid" of the process that started the container


def image_name() -> str:
    return os.environ.get("REDIS_IMAGE") or DEFAULT_IMAGE


def engine_address() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def docker_client() -> Any:
    """A client of a Docker engine that answers, or Unavailable saying why not."""
    address = engine_address()
    if address.startswith("unix://"):  # the SDK leaks the socket of a failed connect: look first
        with socket.socket(socket.AF_UNIX) as probe:
            probe.settimeout(5)
            try:
                probe.connect(address.removeprefix("unix://"))
            except OSError as error:
                reason = error.strerror or str(error)
                raise Unavailable(f"Docker engine not reachable at {address} ({reason})") from None
    try:
        import docker

        client = docker.from_env(timeout=5)
        client.ping()
    except ImportError:
        raise Unavailable("the docker package is not installed") from None
    except Exception as error:  # the SDK raises several unrelated types for "no engine"
        reason = str(error).split(": ", 1)[-1][:160]
        raise Unavailable(f"Docker engine not reachable at {engine_address()} ({reason})") from None
    return client


def require_image(client: Any, image: str) -> None:
    """Unavailable unless ``image`` is present locally or can be pulled now."""
    import docker.errors

    if image_present(client, image):
        return
    try:
        client.images.pull(image)
    except docker.errors.DockerException as error:
        reason = getattr(error, "explanation", None) or error
        raise Unavailable(
            f"image {image} is not present and cannot be pulled ({reason}); "
            f"build one with `make redis-image` and set REDIS_IMAGE={LOCAL_IMAGE}"
        ) from None


def image_present(client: Any, image: str) -> bool:
    import docker.errors

    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        return False
    return True


def sweep_leftovers(client: Any) -> int:
    """Remove containers that runs killed on this host left behind. Returns how many."""
    host = socket.gethostname()
    removed = 0
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        owner_host, _, pid = container.labels.get(OWNER_LABEL, ":").rpartition(":")
        if owner_host == host and pid.isdigit() and not _alive(int(pid)):
            container.remove(force=True)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_container(*, cluster: bool = False) -> RedisServer:
    from testcontainers.core.config import testcontainers_config
    from testcontainers.core.container import DockerContainer

    client = docker_client()
    image = image_name()
    require_image(client, image)
    sweep_leftovers(client)
    if not image_present(client, testcontainers_config.ryuk_image):
        testcontainers_config.ryuk_disabled = True
    port = free_port(cluster=cluster)
    container = (
        DockerContainer(image)
        .with_command(["redis-server", *server_args(port, "/tmp", cluster=cluster)])
        .with_kwargs(
            network_mode="host",
            labels={LABEL: "1", OWNER_LABEL: f"{socket.gethostname()}:{os.getpid()}"},
        )
    )
    try:
        container.start()
    except Exception as error:  # docker.errors.* and requests errors alike
        container.stop()
        raise Unavailable(f"cannot start a container of {image}: {error}") from None
    wrapped = container.get_wrapped_container()

    def died() -> str | None:
        wrapped.reload()
        if wrapped.status in ("created", "running"):
            return None
        logs = wrapped.logs().decode(errors="replace").strip().splitlines()[-3:]
        return f"container of {image} is {wrapped.status}: {' | '.join(logs)}"

    url = f"redis://127.0.0.1:{port}/0"
    try:
        wait_until_ready(url, died)
    except BaseException:
        container.stop()
        raise
    control = ContainerControl(wrapped, url, died)
    detail = f"{image} container {wrapped.short_id}"
    return RedisServer(url, "container", detail, container.stop, control=control)


class ContainerControl:
    """What a fault may do to a container of ours (``ServerControl``): the same container, so
    the same port (host networking); nothing persists in it, so it starts empty."""

    def __init__(self, wrapped: Any, url: str, died: Callable[[], str | None]) -> None:
        self.wrapped, self.url, self.died = wrapped, url, died

    def kill(self) -> None:
        self.wrapped.kill()
        self.wrapped.wait(timeout=30)

    def shutdown(self) -> None:
        shutdown_nosave(self.url)
        self.wrapped.wait(timeout=30)

    def start(self) -> None:
        self.wrapped.start()
        wait_until_ready(self.url, self.died)

    def pause(self) -> None:
        self.wrapped.pause()

    def resume(self) -> None:
        self.wrapped.reload()
        if self.wrapped.status == "paused":
            self.wrapped.unpause()
