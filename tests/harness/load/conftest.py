from collections.abc import Iterator

import pytest

from tests.harness.load.journal import OPEN


@pytest.fixture(autouse=True)
def close_journals() -> Iterator[None]:
    yield
    while OPEN:
        OPEN.pop().close()
