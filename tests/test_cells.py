"""How a cell's text runs: the one transformation the student process and the loader share."""

from __future__ import annotations

from mlmcourse.course.cells import cell_as_python, run_cell


def test_a_percent_that_continues_an_expression_stays_python():
    source = "def f(a, b):\n    return (a\n            % b)\n"
    assert cell_as_python(source) == source


def test_magics_and_shell_lines_become_ipython_calls():
    python = cell_as_python("%time x = 1\n!echo hi\n")
    assert "run_line_magic('time', 'x = 1')" in python
    assert "system('echo hi')" in python


def test_run_cell_gives_magics_display_and_get_ipython_to_the_namespace(capsys):
    namespace: dict = {}
    run_cell("%time x = 6 * 7\n", namespace, "<t1>")
    run_cell("%%time\ndef f():\n    display('shown')\n    return get_ipython() is not None\n",
             namespace, "<t2>")
    assert namespace["x"] == 42
    assert namespace["f"]() is True
    assert "shown" in capsys.readouterr().out
