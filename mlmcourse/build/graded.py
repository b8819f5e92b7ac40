"""The build's graded stage: the sample students graded, regrading only those whose inputs changed.

Each sample student has a key: a digest of what its grading reads (the grader and the course
package, nbgrader_config.py, the source notebooks it hands in and the sibling notebooks they
load, its own samples/<id>.py and the samples/_name.py modules that file imports).
build-manifest.json keeps the key each sample was last graded with; `make build` regrades the
samples whose key changed (or whose committed verdicts are missing), removes what samples that no
longer exist left behind, and keeps everything else as committed. `build --full` regrades every
sample, as the fresh build in tests/test_generated_fresh.py does.
"""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
from pathlib import Path

from mlmcourse.build.samples import (
    VERDICTS,
    SampleStudent,
    build_submissions,
    loaded_siblings,
    write_verdicts,
)
from mlmcourse.course.layout import SERIES
from mlmcourse.grader.class_run.grading import autograde
from mlmcourse.grader.config import GradingConfig
from mlmcourse.grader.limits import Limits

# What grading any sample reads besides its own files: the package rooms a submission, its
# grading and its verdict come from (the reading edition's and the site's modules are not among
# them), and the course's nbgrader configuration.
GRADING_INPUTS = ("mlmcourse/__init__.py", "mlmcourse/course", "mlmcourse/teaching",
                  "mlmcourse/grader", "mlmcourse/build/samples.py", "mlmcourse/build/graded.py",
                  "nbgrader_config.py")
GENERATED_PER_SAMPLE = ("autograded", "feedback")

# The limits the sample class is graded under: its scores do not depend on them, and a hanging
# sample costs seconds instead of minutes (the committed messages of a timeout say 10 s).
SAMPLE_LIMITS = Limits(call_timeout_s=10.0, student_time_s=30.0)
# How long the engine took for each sample's notebooks when it was last graded (not committed:
# it depends on the machine); tests/test_attacks.py reads it as a record, not a check.
GRADING_SECONDS = Path("build") / "sample-grading-seconds.json"
# The samples' grades: a gradebook of their own, made afresh by every build (not committed),
# apart from the class's gradebook.db; it holds the samples that build graded (all of them after
# `build --full`). A TA's gradebook never holds the sample students, and a source edit that adds
# or removes a cell never meets nbgrader's refusal to change a notebook that has submissions.
SAMPLES_GRADEBOOK = Path("build") / "samples-gradebook.db"


def samples_config(root: Path) -> GradingConfig:
    """How the build grades the sample students: their own gradebook, short limits."""
    database = (Path(root) / SAMPLES_GRADEBOOK).resolve()
    return GradingConfig.load(root, f"sqlite:///{database}", limits=SAMPLE_LIMITS)


# ---- the keys -----------------------------------------------------------------------------------


def files_digest(root: Path, inputs) -> str:
    """A hash of every file under the given paths (names and bytes), in a fixed order; the
    committed verdicts under samples/ are made by the build, not an input of it."""
    digest = hashlib.sha256()
    for name in inputs:
        path = root / name
        files = [path] if path.is_file() else sorted(path.rglob("*"))
        for file in files:
            relative = file.relative_to(root)
            if relative.is_relative_to(VERDICTS) or "__pycache__" in file.parts:
                continue
            if file.is_file():
                digest.update(relative.as_posix().encode() + b"\0")
                digest.update(file.read_bytes() + b"\0")
    return digest.hexdigest()


def shared_helpers(sample_file: Path) -> list[str]:
    """The samples/_name.py modules a sample file imports (what several samples share)."""
    tree = ast.parse(sample_file.read_text(encoding="utf-8"))
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
             for alias in node.names}
    names |= {node.module for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.module and not node.level}
    folder = sample_file.parent
    return sorted(f"{name}.py" for name in names
                  if name.startswith("_") and (folder / f"{name}.py").is_file())


def sample_inputs(root: Path, sample: SampleStudent) -> list[str]:
    """The files of the course that this sample's submission and grading read, besides the
    grader (`GRADING_INPUTS`): its notebooks' sources and their siblings', its own file."""
    source = root / "source" / SERIES
    notebooks = set(sample.notebooks)
    for name in sample.notebooks:
        notebooks.update(Path(sibling).stem for sibling in loaded_siblings(root, name))
    samples = Path("samples")
    return ([(source / f"{name}.ipynb").relative_to(root).as_posix()
             for name in sorted(notebooks)]
            + [(samples / f"{sample.student_id}.py").as_posix()]
            + [(samples / helper).as_posix()
               for helper in shared_helpers(root / samples / f"{sample.student_id}.py")])


def sample_keys(root: Path, samples: list[SampleStudent]) -> dict[str, str]:
    """{student_id: key}: a sample is regraded when its key changes."""
    grader = files_digest(root, GRADING_INPUTS)
    digests: dict[str, str] = {}  # each file read once, however many samples share it
    keys = {}
    for sample in samples:
        inputs = sample_inputs(root, sample)
        for name in inputs:
            if name not in digests:
                digests[name] = files_digest(root, [name])
        parts = [grader] + [digests[name] for name in inputs]
        keys[sample.student_id] = hashlib.sha256("".join(parts).encode()).hexdigest()
    return keys


def to_regrade(root: Path, recorded: dict, keys: dict[str, str]) -> list[str]:
    """The samples whose key is not the one recorded, or whose committed verdicts are missing."""
    return sorted(student for student, key in keys.items()
                  if recorded.get(student) != key
                  or not (root / VERDICTS / f"{student}.json").is_file())


def departed(root: Path, recorded: dict, students: set[str]) -> set[str]:
    """Samples graded before (recorded, or with committed verdicts) that no longer exist."""
    verdicts = {path.stem for path in (root / VERDICTS).glob("*.json")}
    return (set(recorded) | verdicts) - students


def stale_samples(root: Path, recorded: dict, samples: list[SampleStudent]) -> list[str]:
    """The samples a build would regrade, and the departed ones whose outputs it would remove."""
    keys = sample_keys(root, samples)
    return sorted(set(to_regrade(root, recorded, keys)) | departed(root, recorded, set(keys)))


# ---- the stage ----------------------------------------------------------------------------------


def build_graded(root: Path, recorded: dict, samples: list[SampleStudent], full: bool = False,
                 log=print) -> dict[str, str]:
    """Write every sample's submission; regrade the samples whose key differs from `recorded`
    (every one when `full`) into `SAMPLES_GRADEBOOK`, with their feedback and verdicts
    (samples/verdicts/); remove what departed samples left. Returns the keys to record."""
    keys = sample_keys(root, samples)
    build_submissions(root, samples)
    remove_departed(root, departed(root, recorded, set(keys)))
    chosen = sorted(keys) if full else to_regrade(root, recorded, keys)
    log(f"build: grading {len(chosen)} of {len(keys)} samples")
    for student in chosen:
        for generated in GENERATED_PER_SAMPLE:
            shutil.rmtree(root / generated / student, ignore_errors=True)
    (root / SAMPLES_GRADEBOOK).parent.mkdir(parents=True, exist_ok=True)
    (root / SAMPLES_GRADEBOOK).unlink(missing_ok=True)
    seconds = {}
    if chosen:  # autograde() given no students grades every submission
        [outcome] = autograde(samples_config(root), chosen, assignments=[SERIES])
        seconds = {student: {v.notebook: round(v.seconds, 2) for v in done.verdicts}
                   for student, done in outcome.outcomes.items()}
    graded = [sample for sample in samples if sample.student_id in chosen]
    write_verdicts(root, graded)
    record_seconds(root, seconds, set(keys), full)
    return keys


def remove_departed(root: Path, students: set[str]) -> None:
    """Remove the autograded notebooks, feedback and verdicts of these departed samples
    (build_submissions has written submitted/ afresh); nothing else there is touched."""
    for student in students:
        for generated in GENERATED_PER_SAMPLE:
            shutil.rmtree(root / generated / student, ignore_errors=True)
        (root / VERDICTS / f"{student}.json").unlink(missing_ok=True)


def record_seconds(root: Path, seconds: dict, students: set[str], full: bool) -> None:
    """Update `GRADING_SECONDS` with the samples just graded (the others keep their record)."""
    path = root / GRADING_SECONDS
    earlier = {} if full or not path.is_file() else json.loads(path.read_text())
    merged = {student: times for student, times in {**earlier, **seconds}.items()
              if student in students}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(sorted(merged.items())), indent=1) + "\n")
