"""The glossary, docs/concepts.md, defines every word of a verdict, a fault and a result that the
output prints: a new kind or fault cannot ship without its entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from ratelimit_harness.harness.checkers import PARTS
from ratelimit_harness.harness.explorer.schedule.faults import FAULTS as RACE_FAULTS
from ratelimit_harness.harness.load.faults.nemesis import FAULTS as LOAD_FAULTS
from ratelimit_harness.harness.load.judge.truth import LIES
from ratelimit_harness.reports.race_report import NOT_JUDGED
from ratelimit_harness.reports.tables import CAUGHT, CLEAN, MISMATCH

GLOSSARY = (Path(__file__).resolve().parents[1] / "docs" / "concepts.md").read_text()

WORDS = sorted(
    {part.kind for part in PARTS}
    | set(LIES)
    | set(LOAD_FAULTS)
    | set(RACE_FAULTS)
    | {CAUGHT, CLEAN, MISMATCH, NOT_JUDGED}
)


@pytest.mark.parametrize("word", WORDS)
def test_the_glossary_defines_every_word_the_output_prints(word: str) -> None:
    # an entry (**Crash.**), an item of one (**collision**), or a word it names (`skew`)
    text = GLOSSARY.lower()
    forms = (f"**{word}.**", f"**{word}**", f"`{word}`")
    assert any(form.lower() in text for form in forms), f"docs/concepts.md lacks {word}"
