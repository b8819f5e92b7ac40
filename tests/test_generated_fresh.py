"""The committed generated editions are what `make build` makes from the sources.

The release, the reading edition and the sample submissions are compared byte for byte with a
fresh build (timings aside). What the grader decided about each sample is compared as data: the
fresh build's verdicts (every check's points and message, the incidents) against the committed
`samples/verdicts/<sample>.json`; the autograded notebooks and the feedback pages, which render
those verdicts, are held to the sources by the manifest's digests (a committed file older than
its inputs fails `test_manifest_matches_current_sources`) and to the fresh build by their names.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import GENERATED, ROOT

from mlmcourse.build.editions import MANIFEST, stale_stages
from mlmcourse.build.samples import VERDICTS, graded_verdicts, load_samples, verdicts_text
from mlmcourse.course import nbio

BYTE_FOR_BYTE = ("release", "notebooks", "submitted")


def files_under(root: Path, folder: str) -> dict[str, Path]:
    base = root / folder
    return {
        p.relative_to(root).as_posix(): p
        for p in sorted(base.rglob("*"))
        if p.is_file() and ".ipynb_checkpoints" not in p.parts and "__pycache__" not in p.parts
    }


def comparable(path: Path) -> bytes:
    """File bytes, except that outputs of cells tagged `timing` (wall-clock numbers) are blanked."""
    if path.suffix != ".ipynb":
        return path.read_bytes()
    return nbio.without_timings(path.read_text(encoding="utf-8")).encode()


def test_manifest_matches_current_sources():  # quick: no build, so the edit loop runs it too
    assert stale_stages(ROOT) == [], (
        "source/, samples/ or mlmcourse/ changed since the last `make build`: run it and commit"
    )


@pytest.mark.slow
@pytest.mark.parametrize("folder", GENERATED)
def test_committed_folder_holds_the_files_of_a_fresh_build(built_course, folder):
    committed, fresh = files_under(ROOT, folder), files_under(built_course, folder)
    assert sorted(committed) == sorted(fresh), (
        f"{folder}/ holds different files than a fresh build: run `make build` and commit\n"
        f"only committed: {sorted(set(committed) - set(fresh))}\n"
        f"only built: {sorted(set(fresh) - set(committed))}"
    )
    if folder in BYTE_FOR_BYTE:
        stale = [name for name in committed
                 if comparable(committed[name]) != comparable(fresh[name])]
        assert not stale, f"stale generated files (run `make build` and commit): {stale}"


@pytest.mark.slow
def test_every_samples_verdicts_are_the_committed_ones(built_course):
    """Check by check: a change in what the grader decides shows here, as a diff of JSON."""
    changed = []
    for sample in load_samples(ROOT):
        path = ROOT / VERDICTS / f"{sample.student_id}.json"
        committed = path.read_text(encoding="utf-8") if path.is_file() else ""
        if verdicts_text(graded_verdicts(built_course, sample.student_id)) != committed:
            changed.append(sample.student_id)
    assert not changed, f"the grader decides otherwise for {changed}: run `make build`, read " \
                        "the diff of samples/verdicts/ and commit it"


@pytest.mark.slow
def test_manifest_is_committed_and_fresh(built_course):
    assert (ROOT / MANIFEST).read_text() == (built_course / MANIFEST).read_text()
