"""Each wrong answer is told its mistake (issue 19): for every wrong and draft sample, the first
failing graded cell of each notebook where it loses points shows the phrase its SHOWS names,
the words a student needs to find the bug. Read from the samples' committed verdicts (the
freshness test holds them to a fresh build); Validate's first message is measured by `make bench
validate`."""

from __future__ import annotations

import pytest
from conftest import ROOT

from mlmcourse.bench.validate import point_losing_pairs
from mlmcourse.build.samples import committed_verdicts

PAIRS = point_losing_pairs(ROOT)


def first_failure(student_id: str, name: str) -> tuple[str, str]:
    """(grade_id, message) of the first failing check of a sample's committed verdicts."""
    for gid, _, message in committed_verdicts(ROOT, student_id)[name]["checks"]:
        if message:
            return gid, message
    raise AssertionError(f"{student_id} {name}: no graded cell fails, yet it loses points")


@pytest.mark.parametrize("sample, name", [
    pytest.param(sample, name, id=f"{sample.student_id}-{name}")
    for sample, name, _, _ in PAIRS
])
def test_the_first_failing_message_names_the_mistake(sample, name):
    phrase = sample.shows.get(name)
    assert phrase, (f"samples/{sample.student_id}.py loses points in {name} but its SHOWS names "
                    "no phrase for it")
    gid, message = first_failure(sample.student_id, name)
    assert phrase in message, (
        f"{sample.student_id} {name}: the first failing test, {gid}, says\n  {message}\n"
        f"which does not name the mistake ({phrase!r})")


def test_every_wrong_and_draft_sample_loses_points_somewhere():
    losing = {sample.student_id for sample, *_ in PAIRS}
    assert len(losing) >= 40, sorted(losing)
