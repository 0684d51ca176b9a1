"""What the history tests share."""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every os.write's data, as it goes to the OS, in order."""
    seen: list[bytes] = []
    real_write = os.write

    def spy(fd: int, data: bytes) -> int:
        seen.append(bytes(data))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", spy)
    return seen
