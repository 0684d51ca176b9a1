# One line per target. `make race-test` is the main job; `make test` is the test suite.
# `make unit VENV=.venv-debian PYTHON=/usr/bin/python3`: the tests on another Python, in a venv of its own
# (UNIT_ARGS: pytest's arguments, to run part of them; TEST_ARGS for test-all: "-n 2" runs on 2 cores
# all but the tests marked realtime, which run one at a time after the rest)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
LOCAL_REDIS_IMAGE := ratelimit-harness/redis:local

.PHONY: venv js race-test load report study test test-all lint unit corpus doctor bench docs redis-image clean

JS := limiters/js
# the JavaScript limiters' ioredis, installed by make venv too where npm is
venv: $(VENV)/.installed $(if $(shell command -v npm 2>/dev/null),js)

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV) && $(PY) -m pip install -q -e '.[dev,compare]' && touch $@

# npm ci, again only when the lock file changed
js: $(JS)/node_modules/.installed

$(JS)/node_modules/.installed: $(JS)/package-lock.json
	cd $(JS) && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.installed

race-test: venv
	$(PY) -m ratelimit_harness race-test $(RACE_ARGS)

load: venv
	$(PY) -m ratelimit_harness load --web $(LOAD_ARGS)

report: venv
	$(PY) -m ratelimit_harness report "$$(ls -td runs/*/ | head -1)"

study: venv
	$(PY) -m ratelimit_harness study $(STUDY_ARGS)

test: lint unit

test-all: lint
	$(PY) -m pytest -m 'not corpus and not realtime' --durations=20 $(TEST_ARGS)
	$(PY) -m pytest -m 'realtime and not corpus' --durations=10

lint: venv
	$(PY) -m ruff check . && $(PY) -m ruff format --check . && $(PY) -m mypy

unit: venv
	$(PY) -m pytest $(UNIT_ARGS)

corpus: venv
	$(PY) -m pip install -q -e '.[dev,compare,corpus]' && $(PY) -m corpus.install && $(PY) -m pytest -m corpus $(CORPUS_ARGS)

doctor: venv
	$(PY) -m ratelimit_harness doctor

bench: venv
	$(PY) bench/table.py $(BENCH_ARGS)

docs: venv
	$(PY) scripts/data_path.py
	$(PY) scripts/tutorial.py
	$(PY) -m ratelimit_harness.reports.bench_docs --check

redis-image:
	scripts/build-redis-image.sh $(LOCAL_REDIS_IMAGE)

clean:
	rm -rf $(VENV) $(JS)/node_modules .corpus .pytest_cache .mypy_cache .ruff_cache .hypothesis
