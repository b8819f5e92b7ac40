"""The grading engine: isolation, integrity, fairness, hostile samples and the self-check.

The hostile samples (samples/hostile_*.py) are graded here through the engine directly, in a
copy of the course, with small limits so that a hang or a memory blow-up costs seconds; their
scores do not depend on the limits. Tests that need the sandbox (Linux namespaces: root, or
unprivileged user namespaces) skip with a message where the platform refuses them.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT, copy_course, run_course, write_sample

from mlmcourse.build.samples import verdict_summary
from mlmcourse.course import nbio
from mlmcourse.course.cells import (
    cells_by_grade_id,
    is_graded,
    is_solution,
    release_stub,
    without_solution_markers,
)
from mlmcourse.course.layout import SERIES, notebook_names
from mlmcourse.grader.engine.rebuild import cells_to_run, defined_names, trusted_notebooks
from mlmcourse.grader.engine.submission import grade_submission
from mlmcourse.grader.limits import Limits
from mlmcourse.grader.processes import sandbox as worker_sandbox
from mlmcourse.grader.processes import zygote_handle
from mlmcourse.grader.results.verdict import Check, Kind, Status, Verdict, error_line
from mlmcourse.grader.trusted_kernel import errors
from mlmcourse.grader.trusted_kernel import harness as trusted_side
from mlmcourse.grader.trusted_kernel.proxies import StudentFunction
from mlmcourse.grader.wire import codec

# Small limits: a hang costs 4 s, a memory blow-up stops at 512 MiB. Scores do not change.
LIMITS = Limits(cell_timeout_s=60, memory_bytes=512 << 20, cpu_seconds=30, call_timeout_s=4,
                student_time_s=20)
SANDBOX_NEEDED = (
    "needs the grading sandbox (Linux mount/PID/network namespaces: run as root, or enable "
    "unprivileged user namespaces, e.g. sysctl kernel.unprivileged_userns_clone=1)"
)


def digest(paths: list[Path]) -> dict[str, str]:
    """sha256 of every file under the given paths (files or folders)."""
    found = {}
    for path in paths:
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in files:
            found[str(file)] = hashlib.sha256(file.read_bytes()).hexdigest()
    return found


def ta_files(course: Path) -> list[Path]:
    return [course / "source", course / "nbgrader_config.py", course / "gradebook.db"]


def sandbox() -> str:
    """The grader's sandbox mode here, or 'refused' where it will not run student code."""
    try:
        return zygote_handle.get_zygote().sandbox
    except worker_sandbox.SandboxRefused:
        return "refused"


# ---------------------------------------------------------------------------------------------
# The hostile samples, as the fresh build graded them (tests/conftest.py: graded_class).


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A copy of the course for the tests that grade a notebook of their own."""
    return copy_course(tmp_path_factory.mktemp("engine") / "course")


HOSTILE = sorted(p.stem for p in (ROOT / "samples").glob("hostile_*.py"))


def test_there_are_hostile_samples_for_every_attack():
    wanted = {"hang", "crash", "memory", "edited_tests", "deleted_tests", "patched_helpers",
              "input_transformer", "traceback", "gradebook", "stderr"}
    assert wanted <= {name.removeprefix("hostile_") for name in HOSTILE}


@pytest.mark.slow
def test_incidents_are_reported_in_the_status(graded_class):
    hang, crash = graded_class.verdicts("hostile_hang"), graded_class.verdicts("hostile_crash")
    segfault = graded_class.verdict("hostile_segfault", "01_corruption")
    assert hang["01_corruption"].status is Status.TIMEOUT
    assert hang["02_stable_log_softmax"].status is Status.OK
    assert crash["01_corruption"].status is Status.CRASHED
    assert segfault.status is Status.CRASHED and "SIGSEGV" in segfault.detail
    assert graded_class.verdict("hostile_stderr", "01_corruption").status is Status.OK
    crashed = [c for c in crash["01_corruption"].checks if not c.passed]
    assert crashed and all("StudentCodeCrashed" in c.message for c in crashed)
    assert {i.kind for i in crash["01_corruption"].incidents} == {Kind.CRASH}


@pytest.mark.slow
def test_grading_changed_no_file_of_the_ta_or_the_students(graded_class):
    """The build graded every sample in its copy: its source/ and config are still the
    repository's (the submitted files are compared with the committed ones byte for byte in
    tests/test_generated_fresh.py)."""
    built = graded_class.root
    assert digest([built / "source"]).values() and \
        sorted(digest([built / "source"]).values()) == sorted(digest([ROOT / "source"]).values())
    assert (built / "nbgrader_config.py").read_bytes() == (ROOT / "nbgrader_config.py").read_bytes()


@pytest.mark.slow
def test_student_code_cannot_reach_the_course(graded_class):
    if sandbox() != "namespaces":
        pytest.skip(SANDBOX_NEEDED)
    marker = "HACKED_BY_hostile_gradebook"
    found = [str(p) for place in (graded_class.root, ROOT) for p in place.rglob(marker)]
    assert not found, f"the hostile student reached the TA's files: {found}"


@pytest.mark.slow
def test_stderr_costs_nothing_and_shows_as_a_note(graded_class):
    nb = nbio.read(graded_class.autograded("hostile_stderr", "01_corruption"))
    streams = [o for c in nb.cells if is_graded(c) for o in c.get("outputs", [])
               if o.get("output_type") == "stream"]
    assert any("wrote to stderr" in o.get("text", "") for o in streams)
    assert graded_class.verdict("hostile_stderr", "01_corruption").score == 24


@pytest.mark.slow
def test_autograded_notebook_shows_the_students_code_and_the_real_tests(graded_class):
    graded_nb = nbio.read(graded_class.autograded("hostile_edited_tests", "01_corruption"))
    source = nbio.read(ROOT / "source" / SERIES / "01_corruption.ipynb")
    shown = cells_by_grade_id(graded_nb)
    for gid, cell in cells_by_grade_id(source).items():
        if is_solution(cell):
            assert "-100)" in shown[gid].source  # the student's own (wrong) line
        else:
            assert shown[gid].source == cell.source, f"{gid} is not the instructor's cell"


def regrade(graded_class, student: str, scratch: Path, name: str = "01_corruption"):
    """One notebook of a sample, graded again from the build's submitted file."""
    from mlmcourse.build.graded import SAMPLE_LIMITS

    [verdict] = grade_submission(graded_class.root, student,
                                 graded_class.submitted(student, name).parent, scratch,
                                 SAMPLE_LIMITS, notebooks=[name])
    return verdict


@pytest.mark.slow
def test_a_regrade_gives_the_same_verdict(graded_class, tmp_path):
    for sample_id in ("hostile_crash", "hostile_stderr"):
        again = regrade(graded_class, sample_id, tmp_path)
        first = graded_class.verdict(sample_id, "01_corruption")
        assert verdict_summary(again) == verdict_summary(first), sample_id


# ---------------------------------------------------------------------------------------------
# The trusted notebook: rebuilt from source/, the student's answers only.


def test_release_stub_is_what_nbgrader_releases():
    for name in notebook_names(ROOT):
        release = ROOT / "release" / SERIES / f"{name}.ipynb"
        if not release.is_file():
            pytest.skip("release/ has not been built")
        released = cells_by_grade_id(nbio.read(release))
        for gid, cell in cells_by_grade_id(nbio.read(ROOT / "source" / SERIES /
                                                         f"{name}.ipynb")).items():
            if is_solution(cell) and cell.cell_type == "code":
                assert release_stub(cell.source) == released[gid].source, f"{name}/{gid}"


def test_defined_names_are_the_reference_definitions():
    source = "import torch\nX = 1\na, (b, c) = 1, (2, 3)\ndef f():\n    y = 2\nclass K:\n    pass\n"
    assert defined_names(source) == ["X", "a", "b", "c", "f", "K"]


def test_trusted_notebook_takes_only_the_solution_cells():
    source = nbio.read(ROOT / "source" / SERIES / "01_corruption.ipynb")
    student = nbio.read(ROOT / "source" / SERIES / "01_corruption.ipynb")
    by_id = cells_by_grade_id(student)
    by_id["make_mlm_inputs"].source = "def make_mlm_inputs(*a):\n    return 'mine'"
    for cell in student.cells:
        if is_graded(cell):
            cell.source = "pass"
    student.cells.append(nbformat.v4.new_code_cell("print('an extra cell')"))
    student.cells = [c for c in student.cells if c.get("metadata", {}).get("nbgrader", {})
                     .get("grade_id") != "test_empty"]
    shown, executed = trusted_notebooks(source, student)
    assert len(shown.cells) == len(source.cells)
    for original, cell, run in zip(source.cells, shown.cells, executed.cells, strict=True):
        if is_solution(original):
            assert cell.source == "def make_mlm_inputs(*a):\n    return 'mine'"
            assert run.source == "__mlm_grader__.solution_cell('make_mlm_inputs')"
        else:
            assert cell.source == run.source == original.source
    cells, bindings = cells_to_run("01_corruption", source, student)
    assert [c["grade_id"] for c in cells] == ["setup", "make_mlm_inputs"]
    assert bindings == {"make_mlm_inputs": ["make_mlm_inputs"]}
    missing, _ = cells_to_run("01_corruption", source, None)
    stub = release_stub(cells_by_grade_id(source)["make_mlm_inputs"].source)
    assert missing[1]["source"] == stub and "raise NotImplementedError()" in stub


def test_a_lone_surrogate_in_an_answer_is_kept_as_its_escape(tmp_path):
    """JSON can carry a lone surrogate, which no notebook file can hold: read as its escape, so
    the graded notebook can be written (it once failed the student's whole submission)."""
    from mlmcourse.grader.engine.rebuild import read_submitted_notebook

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 'SURROGATE'")])
    path = tmp_path / "01_corruption.ipynb"
    path.write_text(nbformat.writes(nb).replace("SURROGATE", "\\ud800"), encoding="utf-8")
    read = read_submitted_notebook(path)
    assert read.cells[0].source == "x = '\\ud800'"
    nbio.write(read, tmp_path / "written.ipynb")


def test_limits_travel_as_json_and_are_checked():
    assert Limits.from_json(LIMITS.to_json()) == LIMITS
    assert Limits.from_json("{}") == Limits()  # the defaults live in one place
    assert Limits().trusted_kernel_memory_bytes == 4 * Limits().memory_bytes
    for bad in ('{"memory_bytes": 0}', '{"memory": 1}', '{"cpu_seconds": 1.5}', "[]",
                '{"call_timeout_s": true}'):
        with pytest.raises(ValueError):
            Limits.from_json(bad)


def test_error_line_is_the_message_of_the_error():
    error = {"output_type": "error", "ename": "AssertionError",
             "evalue": "\x1b[0;31mwrong mask\x1b[0m", "traceback": []}
    assert error_line(error) == "AssertionError: wrong mask"
    assert error_line({**error, "evalue": ""}) == "AssertionError"


def test_codec_keeps_sharing_and_refuses_code():
    import torch

    base = torch.arange(12)
    data = {"a": base, "v": base[2:5], "n": [1, 2.5, None, "s", True, 1 + 2j],
            "t": (torch.float64, torch.device("cpu"), torch.Size([2, 3]))}
    back = codec.unpack_tree(codec.pack_tree(data))
    assert back["v"].tolist() == [2, 3, 4] and back["n"] == data["n"] and back["t"] == data["t"]
    assert back["v"].untyped_storage().data_ptr() == back["a"].untyped_storage().data_ptr()
    with pytest.raises(TypeError):
        codec.pack_tree({"f": print})
    pickled = codec.pack_tree({"g": torch.Generator()}, allow_pickle=True)
    with pytest.raises(ValueError):
        codec.unpack_tree(pickled)  # what the student process sends is never unpickled
    lying = codec.pack_tree(torch.arange(4)).replace(b"[4]", b"[9]")
    with pytest.raises(ValueError):
        codec.unpack_tree(lying)  # a tensor larger than its bytes


# ---------------------------------------------------------------------------------------------
# The worker sandbox, probed from inside by the student's side.

PROJECT = ROOT  # the course's own folder

PROBE = '''
import os, socket

def probe(course, project):
    facts = {"uid": os.getuid(), "cwd": os.getcwd(), "root": sorted(os.listdir("/"))}
    facts["course_visible"] = os.path.exists(course)
    facts["project"] = sorted(os.listdir(project)) if os.path.isdir(project) else None
    facts["pids"] = len([p for p in os.listdir("/proc") if p.isdigit()])
    try:
        socket.create_connection(("1.1.1.1", 53), timeout=1).close()
        facts["network"] = True
    except OSError:
        facts["network"] = False
    for folder in ("/usr", "/", course):
        try:
            with open(os.path.join(folder, "written-by-student"), "w") as handle:
                handle.write("x")
            facts["wrote " + folder] = True
        except OSError:
            facts["wrote " + folder] = False
    with open("scratch.txt", "w") as handle:
        handle.write("a student may write in its own folder")
    return facts
'''


def student_worker(cells: list[dict], limits: Limits = LIMITS):
    harness = trusted_side.Harness({"notebook": "t.ipynb", "notebooks": {"t.ipynb": cells},
                                     "bindings": {}}, None, limits,
                                    zygote_handle.get_zygote().socket_path)
    return harness, harness.client("t.ipynb")


def test_worker_sandbox_hides_the_course_and_the_network(course):
    if sandbox() != "namespaces":
        pytest.skip(SANDBOX_NEEDED)
    harness, client = student_worker([{"grade_id": "p", "source": PROBE, "filename": "<p>"}])
    try:
        facts = StudentFunction(client, "probe")(str(course), str(PROJECT))
    finally:
        harness.close()
    assert facts["course_visible"] is False
    assert facts["network"] is False
    assert facts["wrote /usr"] is False and facts["wrote /"] is False
    assert facts[f"wrote {course}"] is False
    assert facts["pids"] <= 3, "the student process sees processes outside its own namespace"
    # The root holds system folders, the student's home and the first folder of each read-only
    # bind (the venv and package live wherever the course was cloned, e.g. /check/... on CI).
    binds = worker_sandbox.readonly_paths()
    bind_tops = {Path(path).parts[1] for path in [*binds, worker_sandbox.SANDBOX_HOME]}
    assert set(facts["root"]) <= {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32",
                                  "etc", "proc", "dev", "tmp"} | bind_tops
    # Of the project folder itself only the bound package (and venv) show, never its sources.
    visible = set(facts["project"] or [])
    assert visible <= {"mlmcourse", ".venv"}, f"the student process sees {visible} in the project"
    if os.getuid() == 0:
        assert facts["uid"] == worker_sandbox.NOBODY
    assert not list(course.rglob("written-by-student"))


def test_worker_limits_and_restarts():
    cells = [{"grade_id": "c", "filename": "<c>", "source": (
        "import os, time, torch\n"
        "def work(kind):\n"
        "    if kind == 'hang':\n"
        "        while True:\n"
        "            pass\n"
        "    if kind == 'exit':\n"
        "        os._exit(3)\n"
        "    if kind == 'memory':\n"
        "        return torch.ones(1 << 28).sum()\n"  # 1 GiB: over the 512 MiB limit
        "    if kind == 'value':\n"
        "        raise KeyError('a student error')\n"
        "    return kind\n")}]
    harness, client = student_worker(cells, Limits(call_timeout_s=2, student_time_s=30,
                                                    memory_bytes=512 << 20))
    work = StudentFunction(client, "work")
    try:
        assert work("fine") == "fine"
        with pytest.raises(errors.StudentCodeTimeout):
            work("hang")
        assert work("fine") == "fine"  # a new worker
        with pytest.raises(errors.StudentCodeCrashed, match="exit code 3"):
            work("exit")
        with pytest.raises(RuntimeError):
            work("memory")
        with pytest.raises(KeyError):
            work("value")
        assert work("fine") == "fine"
    finally:
        harness.close()


def test_proxy_reproduces_mutation_generators_and_gradients_and_takes_no_claim():
    """What the trusted side sees (bytes written into an input, results, a generator as the call
    left it, gradients) comes back; what only the student's process sees (an output that is a
    view of an input, an input repointed with set_) does not: no point can rest on it."""
    import torch

    cells = [{"grade_id": "c", "filename": "<c>", "source": (
        "import torch\n"
        "def mutate(x):\n"
        "    x[0] = 99\n"
        "    return x[1:], x.clone()\n"
        "def draw(g):\n"
        "    return torch.rand(3, generator=g)\n"
        "def loss(z):\n"
        "    return (z ** 2).sum()\n"
        "def repoint(x):\n"
        "    x.set_(torch.zeros(2, dtype=x.dtype))\n"
        "    return 0\n"
        "def detached(z):\n"
        "    return (z ** 2).sum().detach()\n"
        "def twice(fn, x):\n"
        "    return fn(fn(x))\n")}]
    harness, client = student_worker(cells)
    try:
        x = torch.arange(4)
        view, copy = StudentFunction(client, "mutate")(x)
        assert x.tolist() == [99, 1, 2, 3]  # the caller's tensor changed, as it would natively
        view[0] = -1
        assert x[1] == 1, "an output that is a view of an input comes back as a copy"
        y = torch.arange(4)
        StudentFunction(client, "repoint")(y)
        assert y.tolist() == [0, 1, 2, 3], "an input repointed in the student's process is a claim"
        assert copy.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
        g, reference = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
        assert torch.equal(StudentFunction(client, "draw")(g),
                           torch.rand(3, generator=reference))
        assert torch.equal(torch.rand(2, generator=g), torch.rand(2, generator=reference))
        z = torch.randn(3, dtype=torch.float64, requires_grad=True)
        out = StudentFunction(client, "loss")(z)
        out.backward()
        assert torch.allclose(z.grad, 2 * z.detach())
        assert torch.autograd.gradcheck(StudentFunction(client, "loss"), (z,))
        assert not StudentFunction(client, "detached")(z).requires_grad
        square_sum = StudentFunction(client, "loss")
        twice = StudentFunction(client, "twice")
        assert twice(square_sum, torch.tensor([1.0, 2.0])).item() == 25.0  # a proxy passed in
    finally:
        harness.close()


# ---------------------------------------------------------------------------------------------
# A toy course: a kernel that dies, a cell that hangs, a missing notebook.


def toy_notebook(cells: list[tuple[str, str, dict]]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    for gid, source, extra in cells:
        meta = {"grade_id": gid, "locked": True, "solution": False, "grade": False,
                "schema_version": 3, **extra}
        nb.cells.append(nbformat.v4.new_code_cell(source, metadata={"nbgrader": meta}))
    return nbio.clean_source_notebook(nb)


def test(gid: str, source: str) -> tuple[str, str, dict]:
    return gid, source, {"grade": True, "points": 1}


test.__test__ = False  # a helper, not a test

SETUP = ("setup", "import torch", {})
SOLUTION = ("double", "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n"
            "    ### END SOLUTION", {"solution": True, "locked": False})


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("toy")
    (root / "nbgrader_config.py").write_bytes((ROOT / "nbgrader_config.py").read_bytes())
    notebooks = {
        "01_fine": [SETUP, SOLUTION, test("t_double", "assert double(torch.tensor(2)) == 4")],
        "02_dies": [SETUP, SOLUTION, test("t_before", "assert double(3) == 6"),
                    # t_after reads `os`, so grading runs the cell that kills the kernel
                    ("kill", "import os\nos._exit(1)", {}), test("t_after", "assert os")],
        "03_slow": [SETUP, SOLUTION, test("t_sleep", "import time\ntime.sleep(600)"),
                    test("t_after_sleep", "assert double(1) == 2")],
        "04_absent": [SETUP, SOLUTION, test("t_absent", "assert double(1) == 2")],
    }
    for name, cells in notebooks.items():
        nbio.write(toy_notebook(cells), root / "source" / SERIES / f"{name}.ipynb")
        if name != "04_absent":
            nb = toy_notebook(cells)
            for cell in nb.cells:
                if is_solution(cell):
                    cell.source = without_solution_markers(cell.source)
            nbio.write(nb, root / "submitted" / "toy" / SERIES / f"{name}.ipynb")
    return root


@pytest.mark.slow
def test_a_kernel_death_or_a_timeout_costs_only_that_notebook(toy, tmp_path):
    limits = Limits(cell_timeout_s=3, memory_bytes=512 << 20, cpu_seconds=30)
    results = {r.notebook: r for r in grade_submission(
        toy, "toy", toy / "submitted" / "toy" / SERIES, tmp_path, limits)}
    assert (results["01_fine"].score, results["01_fine"].status) == (1, "ok")
    dies = results["02_dies"]
    assert dies.status == "crashed" and dies.score == 1
    assert [c.passed for c in dies.checks] == [True, False]
    assert "did not run" in dies.checks[1].message
    slow = results["03_slow"]
    assert slow.status == "timeout" and [c.passed for c in slow.checks] == [False, True]
    absent = results["04_absent"]
    assert (absent.status, absent.score) == ("missing", 0)
    assert not (tmp_path / "toy" / "autograded" / "toy" / SERIES / "04_absent.ipynb").exists()


# ---------------------------------------------------------------------------------------------
# The self-check command, and the fallback without a sandbox.


@pytest.mark.slow
def test_check_command_reports_each_test_and_leaves_the_notebook_alone(graded_class):
    notebook = graded_class.submitted("hostile_edited_tests", "01_corruption")
    before = (notebook.read_bytes(), notebook.stat().st_mtime_ns)
    done = run_course(graded_class.root, "check", str(notebook), timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    # each test is named by the notebook's heading
    assert "PASS  1 / 1  A1 · Unselected sites keep their token" in done.stdout
    assert "FAIL  0 / 1  B3 · A custom ignore_index" in done.stdout
    assert "ignore_index=-7: expected -7, got -100" in done.stdout  # the check's own message
    assert "score: 21 / 24" in done.stdout
    assert (notebook.read_bytes(), notebook.stat().st_mtime_ns) == before


@pytest.mark.slow
def test_unsafe_mode_without_sandbox_grades_the_same(graded_class, tmp_path, monkeypatch):
    monkeypatch.setenv("MLMCOURSE_SANDBOX", worker_sandbox.UNSAFE)
    zygote_handle.stop_zygote()
    try:
        assert sandbox() == worker_sandbox.UNSAFE
        for sample_id in ("reference", "hostile_crash"):
            again = regrade(graded_class, sample_id, tmp_path)
            assert again.score == graded_class.verdict(sample_id, "01_corruption").score
    finally:
        zygote_handle.stop_zygote()


def test_kernel_stub_module_imports_nothing_heavy():
    code = ("import sys, mlmcourse.grader.trusted_kernel.kernel_stub as z; "
            "print(sorted(m for m in ('torch', 'nbformat', 'IPython') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------------------
# A failure of the grader is never a student's zero.


def test_a_notebook_the_grader_failed_is_graded_again(course, tmp_path, monkeypatch):
    """A notebook whose grading failed for the grader's reasons (status 'error', or the trusted
    kernel died) is graded once more; the second result is the one returned."""
    from mlmcourse.grader.engine import submission as engine

    calls = []

    def flaky(name, *args):
        calls.append(name)
        if len(calls) == 1:
            raise OSError("the scratch disk hiccuped")
        return Verdict(name, Status.OK, [Check("t", 15.0, 15.0)])

    monkeypatch.setattr(engine, "grade_notebook", flaky)
    submission = tmp_path / "submitted"
    write_sample(course, "reference", submission, ["02_stable_log_softmax"])
    [verdict] = grade_submission(course, "reference", submission / "reference" / SERIES,
                                 tmp_path / "scratch", LIMITS, notebooks=["02_stable_log_softmax"])
    assert calls == ["02_stable_log_softmax"] * 2
    assert (verdict.status, verdict.score) == (Status.OK, 15.0)

    died = Verdict("x", Status.CRASHED, detail=f"{engine.KERNEL_DIED}: gone")
    student_crash = Verdict("x", Status.CRASHED, detail="crash: worker segfault")
    assert engine._graders_fault(died) and not engine._graders_fault(student_crash)


def test_a_task_the_grader_failed_twice_is_not_recorded(monkeypatch):
    """The coordinator's task raises (the submission keeps its earlier grades and is reported)
    rather than hand back a notebook that scored zero because the grader failed."""
    from mlmcourse.grader.class_run import coordinator
    from mlmcourse.grader.engine import submission as engine

    def broken(course, student, submission, scratch, **kwargs):
        return [Verdict("01_corruption", Status.ERROR, [Check("t", 0.0, 24.0, "x")],
                        detail="the grader failed: OSError: disk")]

    monkeypatch.setattr(engine, "grade_submission", broken)
    with pytest.raises(coordinator.GraderFailure, match="01_corruption: the grader failed"):
        coordinator.grade_task({}, "someone", {}, assignment=SERIES)
