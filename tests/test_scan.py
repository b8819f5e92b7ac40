"""The trusted side's scan of answer cells for what the grader cannot check (grader/scan.py).

A finding costs nothing: it marks the checks that rest on the student process's report for a
TA's look.
So the scan must find every known way in, and should find nothing in honest code, however it is
written (a note on an honest answer is noise a TA must read)."""

from __future__ import annotations

import importlib.util

import pytest
from conftest import ROOT

from mlmcourse.build.samples import committed_verdicts, load_sample, sample_notebook
from mlmcourse.course.cells import grade_id, is_solution
from mlmcourse.course.layout import notebook_names
from mlmcourse.grader.scan import scan_source

WAYS_IN = {
    "the grader's package": "import mlmcourse.grader.student_side as w\nw.MAX_RECORDED_OPS = 0",
    "from-import of the grader": "from mlmcourse.grader import student_side",
    "the module table": "import sys\nsys.modules['x'].has_data = None",
    "the module table, imported": "from sys import modules",
    "the module table of another module": "torch.nn.modules.module.sys.modules",
    "frames": "import sys\nsys._getframe(1).f_globals['x'] = 1",
    "a traceback's frames": "try:\n    1/0\nexcept Exception as e:\n    e.__traceback__.tb_frame",
    "the object graph": "import gc\nw = gc.get_objects()",
    "dispatch modes off": "from torch.utils._python_dispatch import _disable_current_modes",
    "dispatch modes by attribute": "torch.utils._python_dispatch._disable_current_modes()",
    "torch._C": "torch._C._len_torch_dispatch_stack()",
    "ctypes": "import ctypes",
    "exec": "exec('import s' + 'ys')",
    "eval": "eval(code)",
    "__import__": "m = __import__('s' + 'ys')",
    "importlib": "import importlib\nimportlib.import_module('x')",
    "a computed getattr": "getattr(torch.utils, name)",
    "a private getattr": "getattr(torch.utils, '_python_dispatch')",
    "the class graph": "().__class__.__base__.__subclasses__()",
    "a function's globals": "f.__globals__['x'] = 1",
    "a magic's code": "%time import mlmcourse",
    "a cell magic's code": "%%capture\nimport ctypes",
    "a shell line": "!cat /proc/1/maps",
    "a magic built at run time": "get_ipython().run_line_magic('time', code)",
    "the shell's namespace": "get_ipython().user_ns",
    "the shell running strings": "get_ipython().run_cell('x = 1')",
    "pickle": "import pickle\npickle.loads(data)",
    "globals()": "globals()['make_mlm_inputs'] = None",
    # the first red team of the scan (each one graded as a sample too)
    "a name resolved from a split string": "import pkgutil\npkgutil.resolve_name('mlm' + 'x')",
    "builtins.exec": "import builtins\nbuiltins.exec(bytes.fromhex('00').decode())",
    "a thread (dispatch modes are per thread)": "import threading\nthreading.Thread(target=f)",
    "a custom operator": "@torch.library.custom_op('c::f', mutates_args=())\ndef f(x): pass",
    "no_dispatch": "from torch.utils._mode_utils import no_dispatch",
    "getattr of the module table": "import sys\ngetattr(sys, 'modules')",
    "object.__getattribute__": "object.__getattribute__(sys, 'modules')",
    "torch._C by import": "import torch._C as C",
    "traceback.walk_stack": "import traceback\ntraceback.walk_stack(None)",
    "timeit on a string": "import timeit\ntimeit.timeit('x')",
    "runpy, pydoc, code, unittest.mock": "import runpy, pydoc, code\nfrom unittest import mock",
    "a file by a computed path": "open('/pr' + 'oc/1/mem')",
    "torch.compile": "g = torch.compile(f)",
    "torch.jit.fork": "torch.jit.fork(f)",
    "the grader through the course package": "import mlmcourse.teaching\nmlmcourse.grader",
    "a bare import of the course package": "import mlmcourse",
    # the third measurement of issue 26: ways in without a name the old scan knew
    "the module table through an alias": "import sys as s\ns.modules['x']",
    "a builtin rebound to itself": "exec = exec\nexec('x = 1')",
    "the shell running strings, by a saved handle": "ip = get_ipython()\nip.ex('x = 1')",
}

HONEST = {
    "plain torch": "x = torch.stack([a, b]).log().exp()",
    "gc.collect": "import gc\ngc.collect()",
    "a literal getattr": "getattr(tokens, 'shape')",
    "torch.ops.aten (a banned operator is no tamper: the recorder judges it)":
        "torch.ops.aten.cross_entropy_loss(x, y, None, 1, -100)",
    "%time": "%time y = f(x)",
    "%%capture": "%%capture out\nprint('hi')",
    "display": "display(x)",
    "math and typing": "import math\nfrom typing import Any\nmath.log(2)",
    "a syntax error": "def f(:\n    pass",
    "a docstring about frames": '"""Never read frames or sys modules here."""',
    # honest habits the first red team of the scan found flagged
    "locals()": "arguments = locals()",
    "hasattr of a private name": "hasattr(x, '_fields')",
    "a compile of its own": "from re import compile\npattern = compile('x')",
    "a parameter named eval": "def f(eval=False):\n    if eval:\n        pass",
    "the course's own checks": "from mlmcourse.teaching.checks import expect",
    "the course's checks by module":
        "import mlmcourse.teaching.checks\nmlmcourse.teaching.checks.expect",
    "an operator by its dispatcher name": "torch.ops.aten._log_softmax(x, -1, False)",
    "os._exit": "import os\nos._exit(1)",
    "get_ipython()": "assert get_ipython() is not None",
    "stderr": "import sys\nprint('x', file=sys.stderr)",
    "a literal open": "open('notes.txt')",
    # honest habits the old scan took for reaches (issue 26): they cost points then
    "logging the count": "import logging\nlogging.getLogger(__name__).info('%d sites', n)",
    "ctx.ex for the exponentials": "ctx.ex = torch.exp(z - z.max())\ny = ctx.ex.sum()",
    "getattr over spelt-out dtype names":
        "ALLOWED = {getattr(torch, n) for n in ('float32', 'float64')}",
    "getattr in a loop over spelt-out names":
        "for name in ('float32', 'float64'):\n    kinds.append(getattr(torch, name))",
    "pathlib": "from pathlib import Path\nPath('notes.txt').exists()",
}


@pytest.mark.parametrize("source", list(WAYS_IN.values()), ids=list(WAYS_IN))
def test_every_known_way_in_is_found(source):
    assert scan_source(source), source


@pytest.mark.parametrize("source", list(HONEST.values()), ids=list(HONEST))
def test_honest_code_is_not_flagged(source):
    assert scan_source(source) == []


# An honest sample whose answers use reflection on purpose (`inspect`, `globals()`, `__dict__`):
# full marks, with notes for a look; no other honest or wrong sample gets a note.
REFLECTIVE = {"honest_style_reflection"}


def test_no_honest_or_wrong_sample_is_flagged():
    """Only hostile samples reach past their answers; the reference and every honest or wrong
    student's answer cells read as clean (but the one that uses reflection on purpose)."""
    names = notebook_names(ROOT)
    flagged = {}
    for path in sorted((ROOT / "samples").glob("*.py")):
        student = load_sample(path, names)
        for name in student.notebooks:
            for cell in sample_notebook(ROOT, student, name).cells:
                if is_solution(cell) and cell.cell_type == "code" and scan_source(cell.source):
                    flagged.setdefault(student.student_id, []).append(grade_id(cell))
    assert flagged, "the hostile samples that reach into the grader were not found"
    assert all(sample.startswith("hostile_") or sample in REFLECTIVE for sample in flagged), \
        flagged


def test_a_reach_never_pays_silently():
    """A sample that reaches past its answer (it names the same code without the reach as its
    TWIN) scores no more than its twin in each notebook, or its verdict there says the grader
    could not check it (an `unchecked` incident: the TA is shown it, with the points at stake)."""
    silent = []
    for path in sorted((ROOT / "samples").glob("hostile_*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        twin = getattr(module, "TWIN", None)
        if twin is None:
            continue
        twin_expected = load_sample(ROOT / "samples" / f"{twin}.py", notebook_names(ROOT)).expected
        verdicts = committed_verdicts(ROOT, path.stem)
        for name, points in module.EXPECTED.items():
            flagged = any(kind == "unchecked" for kind, _ in verdicts.get(name, {}).get(
                "incidents", []))
            if points > twin_expected[name] and not flagged:
                silent.append(f"{path.stem}/{name}: {points} > {twin_expected[name]}")
    assert not silent, silent


def test_the_scan_never_raises_and_stays_in_its_budget():
    """Deep nesting, a huge cell, text that is no Python: each is a finding or nothing, never an
    error, and the scan stops at its budget (it is charged to the notebook's time cap)."""
    import time

    from mlmcourse.grader.limits import CAPS
    from mlmcourse.grader.scan import scan_cells

    deep = "x = " + "+".join(["1"] * 100_000)
    huge = "\n".join(f"y{i} = {i}" for i in range(CAPS.scanned_chars // 8))
    for source in (deep, huge, "(" * 10_000, "\x00\xff not python"):
        started = time.monotonic()
        found = scan_cells([{"grade_id": "answer", "source": source}], budget_s=2.0)
        assert isinstance(found, list)
        assert time.monotonic() - started < 30
    assert scan_cells([{"grade_id": "answer", "source": huge + huge}])  # past the cap: said so
