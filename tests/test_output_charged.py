"""Every character shown from a student's value is charged: a message summarises a large value
(shape, dtype, a few entries), and what the autograded notebook keeps of the trusted kernel's
text is bounded, so no page grows with what a function returns. (The whole path, the pages
`make grade` writes for the sample hostile_huge_result: tests/test_paths_agree.py; nbgrader's
autograde records the same notebook.)"""

from __future__ import annotations

import nbformat
import torch

from mlmcourse.grader.engine.submission import bounded
from mlmcourse.grader.limits import CAPS
from mlmcourse.grader.results.verdict import error_line
from mlmcourse.teaching.checks import CheckFailed, expect_equal, shown

HUGE = torch.zeros(2_000_000, dtype=torch.int64)


def test_a_small_value_is_shown_whole():
    assert shown([[5, 99], [5, 6]]) == "[[5, 99], [5, 6]]"
    assert shown(torch.tensor([[1, 2]])) == "tensor([[1, 2]])"
    assert shown(torch.int64) == "torch.int64"


def test_a_large_value_is_summarised_by_its_size_and_first_entries():
    assert shown(HUGE) == ("a tensor of shape (2000000,), torch.int64 (2000000 entries; the "
                           "first [0, 0, 0, 0, 0, 0] ...)")
    listed = shown(HUGE.tolist())
    assert listed.startswith("a list of 2000000 items: [0, 0, 0, 0, 0, 0, ...]")
    assert len(shown([HUGE.tolist()[:300]] * 300)) < 400
    assert len(shown("x" * 100_000)) < 200


def test_a_failed_equality_check_reads_a_few_lines_whatever_it_got():
    try:
        expect_equal(HUGE.tolist(), [[99, 99]], "corrupted")
    except CheckFailed as failed:
        message = str(failed)
    assert message == ("corrupted: expected [[99, 99]], got a list of 2000000 items: "
                       "[0, 0, 0, 0, 0, 0, ...]")


def test_the_autograded_notebook_keeps_a_bounded_share_of_each_text_and_of_the_notebook():
    long = "1, " * 3_000_000  # what an assert message built from `got.tolist()` may hold
    error = nbformat.v4.new_output("error", ename="AssertionError", evalue=long,
                                   traceback=["frame", long])
    stream = nbformat.v4.new_output("stream", name="stdout", text=long)
    figure = nbformat.v4.new_output("display_data", data={"text/html": long, "text/plain": long})
    budget = [CAPS.trusted_notebook_chars]
    kept = bounded([error, stream, figure], budget)
    texts = [kept[0].evalue, *kept[0].traceback, kept[1].text, kept[2].data["text/plain"]]
    assert max(map(len, texts)) <= CAPS.trusted_text_chars + 100
    assert kept[2].data["text/html"] is long  # a figure's picture is not cut
    many = bounded([nbformat.v4.new_output("stream", name="stdout", text=long)
                    for _ in range(100)], [CAPS.trusted_notebook_chars])
    assert sum(len(output.text) for output in many) <= CAPS.trusted_notebook_chars + 100 * 300


def test_a_checks_message_in_the_verdict_is_bounded():
    output = nbformat.v4.new_output("error", ename="AssertionError", evalue="got " + "7" * 10**6)
    message = error_line(output)
    assert message.startswith("AssertionError: got 777")
    assert len(message) <= CAPS.message_chars + 50
