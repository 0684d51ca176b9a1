import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def race_test_dir(tmp_path: Path) -> Path:
    """A copy of a trimmed race-test run directory: three rows, three traces."""
    return Path(shutil.copytree(FIXTURES / "race-test-20261201-120839", tmp_path / "race-test"))


@pytest.fixture
def race_dir(tmp_path: Path) -> Path:
    """A copy of a race's run directory: a wrongful rejection after a clock jumped 1 ms."""
    name = "race-token-bucket-client-clock-20261201-121004"
    return Path(shutil.copytree(FIXTURES / name, tmp_path / name))


@pytest.fixture
def race_run_dir(tmp_path: Path) -> Path:
    """A copy of a race's run directory with its summary: two flaws of naive-get-set."""
    name = "race-naive-get-set-20261204-195359"
    return Path(shutil.copytree(FIXTURES / name, tmp_path / name))


@pytest.fixture
def clean_race_dir(tmp_path: Path) -> Path:
    """A copy of a clean race's run directory: its summary alone."""
    name = "race-gcra-lua-20261204-195403"
    return Path(shutil.copytree(FIXTURES / name, tmp_path / name))


@pytest.fixture
def race_file(race_dir: Path) -> Path:
    return race_dir / "trace.json"


@pytest.fixture
def load_dir(tmp_path: Path) -> Path:
    """A copy of a trimmed boundary-attack load run: two identities' history kept."""
    return Path(shutil.copytree(FIXTURES / "load-20261201-033808", tmp_path / "load"))
