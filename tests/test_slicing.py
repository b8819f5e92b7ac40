"""Grading runs the graded cells and what they need: a demo cell no graded cell reads is skipped."""

from __future__ import annotations

import nbformat

from mlmcourse.grader.engine.slicing import SKIPPED_NOTE, cells_to_run, skip_unneeded


def _cell(source: str, gid: str, *, graded=False, solution=False):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade_id": gid, "grade": graded, "solution": solution,
                                 "locked": not solution, "schema_version": 3}
    return cell


def _notebook(*cells):
    return nbformat.v4.new_notebook(cells=list(cells))


def test_demo_cells_no_graded_cell_reads_are_skipped():
    nb = _notebook(
        _cell("import torch", "setup"),
        _cell("def f(x):\n    return x", "answer", solution=True),
        _cell("data = torch.ones(3)\nplot = 1", "data"),
        _cell("for seed in range(10):\n    print(f(seed))", "demo"),
        _cell("expected = data * 2", "reference"),
        _cell("def _g(seed):\n    return f(seed)\nassert _g(1) == 1\nassert expected.sum() == 6",
              "test", graded=True),
    )
    # `seed` is a parameter of the test's own function: the demo's loop variable is not needed.
    assert cells_to_run(nb) == {0, 1, 2, 4, 5}


def test_a_cell_whose_names_cannot_be_known_always_runs():
    nb = _notebook(
        _cell("exec('x = 1')", "dynamic"),
        _cell("from math import *", "star"),
        _cell("%matplotlib inline\ny = 2", "magic"),
        _cell("this is not python(", "broken"),
        _cell("assert True", "test", graded=True),
    )
    assert cells_to_run(nb) == {0, 1, 2, 3, 4}


def test_a_rebinding_between_definition_and_use_runs_too():
    nb = _notebook(
        _cell("x = 1", "first"),
        _cell("x = x + 1", "again"),
        _cell("assert x == 2", "test", graded=True),
    )
    assert cells_to_run(nb) == {0, 1, 2}


def test_a_notebook_without_graded_cells_runs_nothing():
    nb = _notebook(_cell("import torch", "setup"), _cell("print(1)", "demo"))
    assert cells_to_run(nb) == set()


def test_the_skipped_cells_are_blank_in_the_kernel_and_say_why():
    source = _notebook(_cell("import torch", "setup"), _cell("print(1)", "demo"),
                       _cell("assert torch", "test", graded=True))
    executed = nbformat.v4.new_notebook(cells=[nbformat.from_dict(dict(c)) for c in source.cells])
    assert skip_unneeded(source, executed) == [1]
    assert executed.cells[1].source == ""
    assert executed.cells[1].outputs[0]["text"] == SKIPPED_NOTE
    assert source.cells[1].source == "print(1)"  # the source notebook is not changed


def test_a_notebook_without_graded_cells_is_graded_0_of_0_without_a_kernel(tmp_path, monkeypatch):
    from mlmcourse.course import nbio
    from mlmcourse.grader.engine import submission as engine
    from mlmcourse.grader.limits import Limits

    def no_kernel(*args, **kwargs):
        raise AssertionError("a notebook without graded cells must not start a kernel")

    monkeypatch.setattr(engine, "run_trusted", no_kernel)
    nb = _notebook(_cell("import torch", "setup"), _cell("print('a long ablation')", "demo"))
    result = engine.grade_notebook("05_appendix", {"05_appendix": nb}, {"05_appendix": nb},
                                   tmp_path, "student", Limits())
    assert (result.score, result.max_score, result.status, result.checks) == (0, 0, "ok", [])
    handed_back = nbio.read(engine.autograded_path(tmp_path, "student", "05_appendix"))
    assert [c.outputs[0]["text"] for c in handed_back.cells] == [SKIPPED_NOTE] * 2
