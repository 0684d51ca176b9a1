"""scripts/sentence_figures.py counts the prose of a Markdown file, and nothing else."""

from tests.scripts import load_script

figures = load_script("sentence_figures")

TEXT = """# A heading is not a sentence

The harness races a limiter. It says which promise broke, and how to replay it
([docs](docs/concepts.md)).

```sh
make race-test   # a code block is not prose. Nor this.
```

| a table | is not prose either. |
|---|---|

- A list item is one. Here is another.
- And `inline code` counts as one word.
"""


def test_only_prose_counts_and_each_sentence_ends_at_its_stop() -> None:
    assert figures.sentences(TEXT) == [
        "The harness races a limiter.",
        "It says which promise broke, and how to replay it (docs).",
        "A list item is one.",
        "Here is another.",
        "And code counts as one word.",
    ]
    counted = figures.figures(TEXT)
    assert (counted.sentences, counted.longest, counted.long) == (5, 11, 0)


def test_a_sentence_may_begin_with_inline_code() -> None:
    assert figures.sentences("It ends here. `race` begins the next.") == [
        "It ends here.",
        "code begins the next.",
    ]
