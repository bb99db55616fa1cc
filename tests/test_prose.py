"""Every chapter reads like a course page: one idea a sentence on the main line, with caveats,
clocks and sources in asides (CONTRIBUTING.md, "Writing"). The measure is `tests/prose.py`."""

import pytest

import prose

ASIDE = """\
Shared memory is fast. It sits on the SM.

```{admonition} Where the clock comes from
:class: dropdown

This sentence is an aside, long as it may be, and it names the clock, the datasheet, the driver,
the date, the command, the method and every caveat a careful reader might ever want to open.
```

| level | rate |
| --- | --- |
| HBM | a table cell is not a sentence of the main line at all |

$$ T = \\max(F/P, B/W) $$

- A list item counts.

```{code-cell} ipython3
print("code is not prose")
```

```{exercise}
:label: ex-x

How many sectors does the warp touch?
```

````{solution-start} ex-x
:class: dropdown
````

A solution is an aside: the reader opens it.

````{solution-end}
````
"""


def test_the_main_line_is_paragraphs_list_items_and_exercises_never_asides_code_or_tables():
    assert prose.sentences(ASIDE) == ["Shared memory is fast.", "It sits on the SM.", "A list item counts.",
                                      "How many sectors does the warp touch?"]


def test_roles_count_as_the_words_a_reader_sees():
    text = ("The A100's HBM needs {glue:md}`vec_time` {cite:p}`nvidia_a100` for one {term}`sector <sector>`, "
            "see {numref}`fig-x` and {doc}`chapter 3 <03_tiling>`, `x[i]` and $n$.")
    (only,) = prose.sentences(text)
    assert only == "The A100's HBM needs X for one sector, see Figure X and chapter 3, X and X."
    assert prose.words(only) == 17


def test_sentences_are_cut_where_a_reader_stops_not_at_abbreviations_or_decimals():
    found = prose.sentences("It runs 1.5x faster, e.g. in Fig. 6.1 of the paper. Then it stops.")
    assert found == ["It runs 1.5x faster, e.g. in Fig. 6.1 of the paper.", "Then it stops."]


def test_a_page_over_a_limit_is_named_with_its_longest_sentence(tmp_path):
    page = tmp_path / "01_x.md"
    page.write_text(" ".join(["word"] * 61) + ". Short one.\n")
    faults = prose.readability(page).faults()
    assert len(faults) == 3 and "61 words" in faults[2] and "31.5 words" in faults[0]


@pytest.mark.parametrize("chapter", prose.CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_reads_like_a_course(chapter):
    faults = prose.readability(chapter).faults()
    assert not faults, f"{chapter.stem}: " + "; ".join(faults) + " (python tests/prose.py names the longest)"
