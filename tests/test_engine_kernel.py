"""The trusted kernel in `mlmcourse.grader.engine.submission`: what it runs under and how long it
may run.

- Nothing a student's function prints may stop the notebook: the honest sample
  ``honest_stderr_every_call`` (stderr on every call, notebook 4 calling both functions hundreds
  of times) keeps full marks, and text written into an ipywidgets ``Output`` in the trusted kernel
  (which made nbclient's widget mimic raise ``KeyError``) stops nothing.
- The kernel runs with ``NBGRADER_EXECUTION=autograde``, as under nbgrader, so the sliders of
  notebook 4 stay inert.
- A notebook has a total wall-clock cap (`engine.notebook_cap_s`): past it the kernel is
  stopped, the tests not yet run count as not run, and the status says "timeout".
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from conftest import ROOT

from mlmcourse.build.samples import expected_scores, load_sample
from mlmcourse.course import nbio
from mlmcourse.course.cells import is_solution, without_solution_markers
from mlmcourse.course.layout import SERIES, notebook_names
from mlmcourse.grader.engine import submission as engine
from mlmcourse.grader.engine.submission import grade_submission
from mlmcourse.grader.limits import Limits
from mlmcourse.grader.results.verdict import NOT_RUN

# ---------------------------------------------------------------------------------------------
# A toy course: one solution cell, then locked and graded cells.


def code_cell(gid: str, source: str, **nbgrader) -> nbformat.NotebookNode:
    meta = {"grade_id": gid, "locked": True, "solution": False, "grade": False,
            "schema_version": 3, **nbgrader}
    return nbformat.v4.new_code_cell(source, metadata={"nbgrader": meta})


def graded_cell(gid: str, source: str) -> nbformat.NotebookNode:
    return code_cell(gid, source, grade=True, points=1)


def toy_course(root: Path, cells: list[nbformat.NotebookNode]) -> Path:
    """A course with one notebook, 01_toy, and the student 'toy' who hands in the reference;
    returns the student's submission folder."""
    head = [code_cell("setup", "import time"),
            code_cell("double", "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n"
                      "    ### END SOLUTION", solution=True, locked=False)]
    nb = nbformat.v4.new_notebook()
    nb.cells = head + cells
    nb = nbio.clean_source_notebook(nb)
    nbio.write(nb, root / "source" / SERIES / "01_toy.ipynb")
    for cell in nb.cells:
        if is_solution(cell):
            cell.source = without_solution_markers(cell.source)
    submission = root / "submitted" / "toy" / SERIES
    nbio.write(nb, submission / "01_toy.ipynb")
    return submission


def grade_toy(root: Path, cells, limits: Limits, scratch: Path):
    submission = toy_course(root, cells)
    [result] = grade_submission(root, "toy", submission, scratch, limits)
    return result


# Short limits; the cap is cell_timeout_s + student_time_s + the margin (set in each test).
SHORT = Limits(cell_timeout_s=3, memory_bytes=512 << 20, cpu_seconds=30, call_timeout_s=2,
               student_time_s=1)


# ---------------------------------------------------------------------------------------------
# The kernel's environment and widgets.


def test_the_trusted_kernel_runs_as_under_nbgrader_autograde(tmp_path):
    cells = [graded_cell("t_env", "import os\n"
                         "assert os.environ.get('NBGRADER_EXECUTION') == 'autograde'\n"
                         "assert double(2) == 4"),
             graded_cell("t_sliders_inert",
                         "from mlmcourse.teaching.sliders import show_sliders\n"
                         "assert show_sliders(double, double) is None")]
    result = grade_toy(tmp_path / "course", cells, Limits(), tmp_path / "scratch")
    assert (result.status, result.score) == ("ok", 2), result.checks


def test_text_in_an_output_widget_stops_nothing(tmp_path):
    # What the slider panel does when a student's function prints: text arrives on the kernel's
    # stderr while an Output widget captures it (nbclient's mimic raised KeyError here).
    widget = ("import sys\nimport ipywidgets\nfrom IPython.display import display\n"
              "out = ipywidgets.Output()\ndisplay(out)\n"
              "for _ in range(5):\n"
              "    with out:\n"
              "        time.sleep(0.05)  # the widget's state reaches the client first\n"
              "        print('a line on stdout', flush=True)\n"
              "        print('a line on stderr', file=sys.stderr, flush=True)\n"
              "    out.clear_output()")
    cells = [code_cell("widget", widget),
             # The test reads `out`, so grading runs the widget cell before it.
             graded_cell("t_after_widget", "assert double(3) == 6 and out is not None")]
    result = grade_toy(tmp_path / "course", cells, Limits(), tmp_path / "scratch")
    assert (result.status, result.score) == ("ok", 1), (result.detail, result.checks)


# ---------------------------------------------------------------------------------------------
# The notebook's wall-clock cap.


def test_a_notebook_of_slow_cells_stops_at_its_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "NOTEBOOK_MARGIN_S", 4.0)
    cap = engine.notebook_cap_s(SHORT)  # 3 + 1 + 4 = 8 s; the cells alone would take 16 s
    cells = [graded_cell(f"t_sleep_{i}", "time.sleep(2)\nassert double(1) == 2")
             for i in range(8)]
    result = grade_toy(tmp_path / "course", cells, SHORT, tmp_path / "scratch")
    assert result.status == "timeout", result.detail
    assert f"cap of {cap:g} s" in result.detail
    assert 1 <= result.score < 8
    # The cell the cap cut short fails (it started, so it is not "not run"); the rest did not run.
    failed = [t.message for t in result.checks if not t.passed]
    assert failed[0].startswith("NotebookTimeout: ") and set(failed[1:]) == {NOT_RUN}, failed


def test_a_cell_that_ignores_the_interrupt_still_stops_at_the_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "NOTEBOOK_MARGIN_S", 4.0)
    cap = engine.notebook_cap_s(SHORT)
    deaf = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(600)"
    cells = [graded_cell("t_first", "assert double(1) == 2"),
             graded_cell("t_deaf", deaf),
             graded_cell("t_after", "assert double(2) == 4")]
    result = grade_toy(tmp_path / "course", cells, SHORT, tmp_path / "scratch")
    assert result.status == "timeout", result.detail
    assert f"cap of {cap:g} s" in result.detail
    assert [t.passed for t in result.checks] == [True, False, False]
    assert result.checks[1].message.startswith("NotebookTimeout: "), result.checks[1].message
    assert result.checks[-1].message == NOT_RUN


def test_the_default_cap_bounds_a_notebook_by_its_limits():
    limits = Limits()
    assert engine.notebook_cap_s(limits) == (
        limits.cell_timeout_s + limits.student_time_s + engine.NOTEBOOK_MARGIN_S)


# ---------------------------------------------------------------------------------------------
# The honest sample that prints on every call, and the reference, through notebook 4: as the
# fresh build graded them (under limits shorter than the defaults).


@pytest.mark.slow
@pytest.mark.parametrize("sample_id", ["honest_stderr_every_call", "reference"])
def test_notebook_4_keeps_full_marks_whatever_the_functions_print(sample_id, graded_class):
    sample = load_sample(ROOT / "samples" / f"{sample_id}.py", notebook_names(ROOT))
    wanted = ["01_corruption", "03_empty_mask_and_gradient", "04_experiment"]
    assert set(wanted) <= set(sample.notebooks)  # notebook 4 loads the answers of 1 and 3
    expected = {name: expected_scores(ROOT, sample)[name] for name in wanted}
    got = [graded_class.verdict(sample_id, name) for name in wanted]
    scores = {r.notebook: r.score for r in got}
    failed = [f"{r.notebook}/{t.grade_id}: {t.message[:160]} ({r.status}; {r.detail})"
              for r in got for t in r.checks if not t.passed]
    assert scores == expected, "\n".join(failed)
    assert {r.status for r in got} == {"ok"}
