"""The trusted side's scan of answer cells (grader/scan.py): advice for the TA, never a point.

No point rests on what the student's process reports, so a reach into that process gains nothing
over the same code without it (each hostile sample that names a TWIN is held to its twin's score,
with no way out through a flag). The scan then only says what the grader cannot check; it must
stay quiet on everyday habits: at most one in twenty honest answers of the sample corpus marked."""

from __future__ import annotations

import pytest
from conftest import ROOT

from mlmcourse.build.samples import expected_scores, load_sample, load_samples, sample_notebook
from mlmcourse.course import nbio
from mlmcourse.course.cells import is_solution
from mlmcourse.course.layout import SERIES, notebook_names
from mlmcourse.grader.engine.scan import asks_for_loss_by_hand, scan_cells, scan_source
from mlmcourse.grader.limits import CAPS

REACHES = {
    "the grader's package": "import mlmcourse.grader.sandboxed.student_side as w",
    "from-import of the grader": "from mlmcourse.grader import student_side",
    "the module table": "import sys\nsys.modules['x'].has_data = None",
    "frames": "import sys\nsys._getframe(1).f_globals['x'] = 1",
    "the object graph": "import gc\nw = gc.get_objects()",
    "dispatch modes off": "from torch.utils._python_dispatch import _disable_current_modes",
    "torch._C": "torch._C._len_torch_dispatch_stack()",
    "ctypes": "import ctypes",
    "the class graph": "().__class__.__base__.__subclasses__()",
    "a function's globals": "f.__globals__['x'] = 1",
    "a magic's code": "%time import mlmcourse.grader",
    "a shell line": "!cat /proc/1/maps",
    "__torch_function__ by assignment": "class T(torch.Tensor):\n    __torch_function__ = f",
}

# Everyday habits: none is a finding (each is also an honest sample, graded to full marks).
HABITS = {
    "types.SimpleNamespace": "from types import SimpleNamespace\ncfg = SimpleNamespace(p=0.8)",
    "vars(self)": "class C:\n    def __repr__(self):\n        return str(vars(self))",
    "getattr(torch, n) over names from a dict":
        "DT = {'a': 'float32'}\nkinds = [getattr(torch, n) for n in DT.values()]",
    "if DEBUG: breakpoint()": "DEBUG = False\nif DEBUG:\n    breakpoint()",
    "traceback.print_exc() in a self-test":
        "import traceback\ntry:\n    f()\nexcept Exception:\n    traceback.print_exc()",
    "a method named _enable_value_checks": "class C:\n    def _enable_value_checks(self): pass",
    "doctest examples": 'def f(x):\n    """\n    >>> f(1)\n    1\n    """\n    return x',
    "@torch.jit.script": "@torch.jit.script\ndef branch(u: torch.Tensor) -> torch.Tensor:\n"
                         "    return u < 0.8",
    "a !pip show line": "!pip show torch",
    "torch._assert": "torch._assert(x.dim() == 2, 'x must be 2-D')",
    "a tqdm loop": "from tqdm import tqdm\nfor i in tqdm(range(3)):\n    pass",
    "exec of its own text": "exec('y = 1')",
    "model.eval()": "model.eval()",
    "the cell magics": "%%time\nx = 1",
    "the stalling cell's lines": "x = %time 1\nx = !true\n?name",
}


@pytest.mark.parametrize("source", list(REACHES.values()), ids=list(REACHES))
def test_a_reach_past_the_answer_is_noted(source):
    assert scan_source(source), source


@pytest.mark.parametrize("source", list(HABITS.values()), ids=list(HABITS))
def test_an_everyday_habit_is_no_finding(source):
    assert scan_source(source, library_rule=True) == []


def test_a_library_loss_is_a_note_only_where_the_exercise_asks_for_it_by_hand():
    call = "import torch.nn.functional as F\ndef loss(z, y):\n    return F.cross_entropy(z, y)"
    assert scan_source(call, library_rule=True)
    assert scan_source(call, library_rule=False) == []
    self_test = "assert torch.allclose(loss(z, y), F.cross_entropy(z, y))"  # as the notebooks do
    assert scan_source(self_test, library_rule=True) == []
    sources = {name: nbio.read(ROOT / "source" / SERIES / f"{name}.ipynb")
               for name in notebook_names(ROOT)}
    asking = sorted(name for name, nb in sources.items() if asks_for_loss_by_hand(nb))
    assert asking == ["02_stable_log_softmax", "03_empty_mask_and_gradient"]


def honest_answers() -> dict[str, list[str]]:
    """For each honest sample (the reference, `honest_*`): its notebooks whose answer cells the
    scan marks for a look, as the engine scans them (the library rule where the notebook asks)."""
    names = notebook_names(ROOT)
    sources = {name: nbio.read(ROOT / "source" / SERIES / f"{name}.ipynb") for name in names}
    marked = {}
    for student in load_samples(ROOT):
        if student.student_id != "reference" and not student.student_id.startswith("honest_"):
            continue
        marked[student.student_id] = [
            name for name in student.notebooks
            if scan_cells([{"grade_id": str(i), "source": cell.source} for i, cell in enumerate(
                sample_notebook(ROOT, student, name).cells) if is_solution(cell)],
                library_rule=asks_for_loss_by_hand(sources[name]))]
    return marked


def test_at_most_one_in_twenty_honest_answers_is_marked_for_a_look():
    marked = honest_answers()
    assert len(marked) >= 30, f"the honest corpus holds {len(marked)} samples, not 30"
    flagged = sorted(student for student, notebooks in marked.items() if notebooks)
    assert len(flagged) * 20 <= len(marked), flagged


def test_a_reach_never_scores_more_than_its_twin():
    """A sample that reaches past its answer (it names the same code without the reach as its
    TWIN) scores no more than its twin in each notebook: no flag excuses it."""
    names = notebook_names(ROOT)
    higher = []
    for path in sorted((ROOT / "samples").glob("hostile_*.py")):
        twin = getattr(_module(path), "TWIN", None)
        if twin is None:
            continue
        expected = load_sample(path, names).expected
        twin_expected = expected_scores(ROOT, load_sample(ROOT / "samples" / f"{twin}.py", names))
        higher += [f"{path.stem}/{name}: {points} > {twin_expected[name]}"
                   for name, points in expected.items() if points > twin_expected[name]]
    assert not higher, higher


def _module(path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"twin_of_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_stalling_cell_is_read_without_ipythons_transformer(monkeypatch):
    """Lines such as `x = %time 1`, `x = !true` and `?name` once kept the scan inside IPython's
    transformer for minutes (its time grows with magics times lines): the scan reads the text
    itself, with patterns linear in it, and still sees a reach inside a magic."""
    from IPython.core.inputtransformer2 import TransformerManager

    def never(*args, **kwargs):
        raise AssertionError("the scan ran IPython's transformer")

    monkeypatch.setattr(TransformerManager, "transform_cell", never)
    stalling = "\n".join(["x = %time 1", "x = !true", "?name"] * 2_000)  # about 0.05 MB
    assert scan_cells([{"grade_id": "answer", "source": stalling}]) == []
    assert scan_source(stalling + "\nx = %time sys.modules")


def test_the_scan_never_raises_and_says_what_it_could_not_read():
    deep = "x = " + "+".join(["1"] * 100_000)
    huge = "\n".join(f"y{i} = {i}" for i in range(CAPS.scanned_chars // 8))
    for source in (deep, huge, "(" * 10_000, "\x00\xff not python"):
        assert isinstance(scan_cells([{"grade_id": "answer", "source": source}]), list)
    assert scan_cells([{"grade_id": "answer", "source": huge + huge}])  # past the cap: said so
    assert scan_cells([{"grade_id": "answer", "source": huge}], budget_s=-1.0)  # out of time
