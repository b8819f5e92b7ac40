"""The committed generated editions are exactly what `make build` makes from the sources."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import GENERATED, ROOT

from mlmcourse.build.editions import MANIFEST, stale_stages
from mlmcourse.course import nbio

pytestmark = pytest.mark.slow


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


def test_manifest_matches_current_sources():
    assert stale_stages(ROOT) == [], (
        "source/, samples/ or mlmcourse/ changed since the last `make build`: run it and commit"
    )


@pytest.mark.parametrize("folder", GENERATED)
def test_committed_folder_matches_a_fresh_build(built_course, folder):
    committed, fresh = files_under(ROOT, folder), files_under(built_course, folder)
    assert sorted(committed) == sorted(fresh), (
        f"{folder}/ holds different files than a fresh build: run `make build` and commit\n"
        f"only committed: {sorted(set(committed) - set(fresh))}\n"
        f"only built: {sorted(set(fresh) - set(committed))}"
    )
    stale = [name for name in committed if comparable(committed[name]) != comparable(fresh[name])]
    assert not stale, f"stale generated files (run `make build` and commit): {stale}"


def test_manifest_is_committed_and_fresh(built_course):
    assert (ROOT / MANIFEST).read_text() == (built_course / MANIFEST).read_text()
