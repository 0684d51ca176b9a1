import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def race_test_dir(tmp_path: Path) -> Path:
    """A copy of a trimmed race-test run directory: three rows, four traces."""
    return Path(shutil.copytree(FIXTURES / "race-test-20261201-032304", tmp_path / "race-test"))


@pytest.fixture
def race_file(tmp_path: Path) -> Path:
    name = "race-fixed-window-incr-expire-20261201-032304.json"
    return Path(shutil.copy(FIXTURES / name, tmp_path / name))


@pytest.fixture
def load_dir(tmp_path: Path) -> Path:
    """A copy of a trimmed boundary-attack load run: two identities' history kept."""
    return Path(shutil.copytree(FIXTURES / "load-20261201-033808", tmp_path / "load"))
