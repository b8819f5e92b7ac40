"""The trusted side's scan of answer cells for reaches into the grader (mlmcourse/grader/tamper.py).

A finding costs a submission the checks whose verdict rests on the worker's claims; so the scan
must find every known way in, and must find nothing in honest code, however it is written."""

from __future__ import annotations

import importlib.util

import pytest
from conftest import ROOT

from mlmcourse.build.samples import load_sample, sample_notebook
from mlmcourse.course.cells import grade_id, is_solution
from mlmcourse.course.layout import notebook_names
from mlmcourse.grader.tamper import scan_source

WAYS_IN = {
    "the grader's package": "import mlmcourse.grader.worker as w\nw.MAX_RECORDED_OPS = 0",
    "from-import of the grader": "from mlmcourse.grader import worker",
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
}


@pytest.mark.parametrize("source", list(WAYS_IN.values()), ids=list(WAYS_IN))
def test_every_known_way_in_is_found(source):
    assert scan_source(source), source


@pytest.mark.parametrize("source", list(HONEST.values()), ids=list(HONEST))
def test_honest_code_is_not_flagged(source):
    assert scan_source(source) == []


def test_no_honest_or_wrong_sample_is_flagged():
    """Only hostile samples reach into the grader; the reference and every honest or wrong
    student's answer cells read as clean."""
    names = notebook_names(ROOT)
    flagged = {}
    for path in sorted((ROOT / "samples").glob("*.py")):
        student = load_sample(path, names)
        for name in student.notebooks:
            for cell in sample_notebook(ROOT, student, name).cells:
                if is_solution(cell) and cell.cell_type == "code" and scan_source(cell.source):
                    flagged.setdefault(student.student_id, []).append(grade_id(cell))
    assert flagged, "the hostile samples that reach into the grader were not found"
    assert all(sample.startswith("hostile_") for sample in flagged), flagged


def test_a_tampering_sample_never_scores_more_than_its_honest_twin():
    for path in sorted((ROOT / "samples").glob("hostile_*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        twin = getattr(module, "TWIN", None)
        if twin is None:
            continue
        twin_expected = load_sample(ROOT / "samples" / f"{twin}.py", notebook_names(ROOT)).expected
        for name, points in module.EXPECTED.items():
            assert points <= twin_expected[name], (path.stem, name)
