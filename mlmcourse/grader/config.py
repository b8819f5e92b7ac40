"""The course's grading configuration, resolved once per run, and the ways to run nbgrader.

`GradingConfig.load(root)` reads the course's nbgrader_config.py once and resolves what a
grading run needs: the gradebook's database URL (`--db-url`, else nbgrader_config.py's
`c.CourseDirectory.db_url`, else SQLite in the course root), the course id, the `Limits` of
the student's code and the sandbox mode (`Grading`, below: `c.Grading.*`), and where the work
runs (local workers or a Dask scheduler). The run passes that one object down: `mlmcourse.cli`
-> `grader.class_run.grading` -> `grader.class_run.coordinator`.

One configuration for every way in: `Grading` (the section `c.Grading` of nbgrader_config.py)
holds every limit of `Limits` (one setting per field, made from it) and the sandbox mode;
`make grade` (`GradingConfig.load`), `make check` (`mlmcourse.check`, inside a course) and
nbgrader (`nbgrader autograde`, the formgrader: `nbgrader_plugin.EngineExecute`) all read it
through `grading_settings`. The late policy stays where nbgrader keeps it
(`c.LateSubmissionPlugin.penalty_method`, `c.AssignLatePenalties.plugin_class`); both paths
apply it through nbgrader's own `AssignLatePenalties` in the one gradebook writer
(`grader.results.gradebook.apply_late_policy`).

Below `grader.class_run.coordinator` and `grader.class_run.grading`, above nothing of the grader:
nbgrader's converters run in-process through `nbgrader_converter` / `run_converter`, its command
line
through `run_nbgrader`; `with_interpreter_bin` is the one place that puts this interpreter's
bin/ on a PATH (nbgrader calls `alembic`, a console script installed there).
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from traitlets import Bool, Float, Integer, Unicode
from traitlets.config import Configurable

from mlmcourse.grader.limits import Limits

DEFAULT_DB_URL = "sqlite:///gradebook.db"
DEFAULT_COURSE_ID = "default_course"  # nbgrader's own default
SQLITE_PREFIX = "sqlite:///"


# ---- this interpreter's tools on PATH -----------------------------------------------------------


def interpreter_bin() -> str:
    """The folder of this interpreter's console scripts (a virtualenv's bin/)."""
    return os.path.dirname(sys.executable)


def with_interpreter_bin(path: str | None) -> str:
    """`path` (a PATH value) with this interpreter's bin/ first, and only there."""
    bindir = interpreter_bin()
    rest = [entry for entry in (path or "").split(os.pathsep) if entry and entry != bindir]
    return os.pathsep.join([bindir, *rest])


def tool_env() -> dict[str, str]:
    """This environment for an nbgrader subprocess: this interpreter's bin/ first, and not
    marked as running inside nbgrader's own execution."""
    env = dict(os.environ)
    env["PATH"] = with_interpreter_bin(env.get("PATH"))
    env.pop("NBGRADER_EXECUTION", None)
    return env


def tools_on_path() -> None:
    """Let this process find `alembic`, which nbgrader runs when it creates a gradebook."""
    os.environ["PATH"] = with_interpreter_bin(os.environ.get("PATH"))


# ---- the course's nbgrader configuration --------------------------------------------------------


def course_config(root: Path) -> Any:
    """nbgrader_config.py of the course, loaded the way nbgrader loads it (a traitlets Config)."""
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    path = Path(root) / "nbgrader_config.py"
    if not path.is_file():
        return Config()
    return PyFileConfigLoader(path.name, path=str(path.parent)).load_config()


def gradebook_url(root: Path, db_url: str | None = None, nbgrader_config: Any = None) -> str:
    """The gradebook's database URL: `db_url`, else nbgrader_config.py's, else SQLite in root.

    A relative SQLite path is relative to the course root (as when nbgrader runs there), and is
    made absolute: the run's converters work in other folders. `nbgrader_config`: the course's
    config when already loaded (else it is read)."""
    if not db_url:
        loaded = course_config(root) if nbgrader_config is None else nbgrader_config
        db_url = loaded.CourseDirectory.get("db_url")
    url = db_url or DEFAULT_DB_URL
    path = url[len(SQLITE_PREFIX):]
    if url.startswith(SQLITE_PREFIX) and path and not path.startswith("/"):
        url = SQLITE_PREFIX + str((Path(root) / path).resolve())
    return url


def course_id(root: Path, nbgrader_config: Any = None) -> str:
    """The course id of nbgrader_config.py (nbgrader's default when it names none)."""
    loaded = course_config(root) if nbgrader_config is None else nbgrader_config
    return loaded.CourseDirectory.get("course_id") or DEFAULT_COURSE_ID


# ---- the TA's grading settings: c.Grading.* --------------------------------------------------

SANDBOX_MODES = ("auto", "namespaces", "unsafe-no-sandbox")
SANDBOX_VARIABLE = "MLMCOURSE_SANDBOX"
# The limits' older spelling, read by nbgrader's path only before: refused, with the new name.
LEGACY_SECTION = "EngineExecute"
# Settings renamed when "worker" came to mean a Dask worker only: refused, with the new name.
RENAMED_SETTINGS = {"worker_cpus": "student_cpus", "worker_tasks": "student_tasks"}


def _limit_setting(spec) -> Any:
    """The `c.Grading` setting of one field of `Limits`: its default and help from there."""
    kind = Integer if spec.type == "int" else Float
    return kind(spec.default, help=spec.metadata["help"]).tag(config=True)


class _Settings(Configurable):
    sandbox = Unicode("", help="The sandbox mode (auto, namespaces or unsafe-no-sandbox) where "
                               "the MLMCOURSE_SANDBOX environment variable sets none; '': auto."
                      ).tag(config=True)

    class_feedback = Bool(False, help="Each student's feedback gains, per failed check, one "
                          "anonymous line on how common that failure was in the class and its "
                          "most common cause (from the class report, reports/class-lines.json)."
                          ).tag(config=True)

    def limits(self) -> Limits:
        return Limits(**{spec.name: getattr(self, spec.name) for spec in fields(Limits)})

    def apply_sandbox_mode(self) -> None:
        use_sandbox_mode(self.sandbox)


# What a TA sets for grading in nbgrader_config.py, as `c.Grading.<name> = value`: one setting
# per field of `mlmcourse.grader.limits.Limits` (declared there, once), the sandbox mode
# and the class's lines in the feedback. `make grade`, `make check` and `nbgrader autograde` (and
# the
# formgrader) read it through `grading_settings`.
Grading = type("Grading", (_Settings,), {
    "__doc__": "The course's grading settings (`c.Grading`): the limits of `Limits`, the "
               "sandbox mode, the class's lines in the feedback.",
    **{spec.name: _limit_setting(spec) for spec in fields(Limits)},
})


def use_sandbox_mode(mode: str) -> None:
    """Make this process's grading use the sandbox mode `mode` (c.Grading.sandbox; '': leave it).
    An MLMCOURSE_SANDBOX in the environment wins: it is the operator's word for this one run.
    Call it before the process's first grading starts its fork server."""
    if mode and mode != "auto" and not os.environ.get(SANDBOX_VARIABLE):
        os.environ[SANDBOX_VARIABLE] = mode


def old_spellings(config: Any, known: set[str]) -> list[tuple[str, str]]:
    """(old, new) for each setting spelt the old way: `c.EngineExecute.<limit>` and the names
    of `RENAMED_SETTINGS`, in one place."""
    found = []
    if LEGACY_SECTION in config:
        found += [(f"c.{LEGACY_SECTION}.{name}", f"c.Grading.{name}")
                  for name in sorted(config[LEGACY_SECTION]) if name in known]
    if "Grading" in config:
        found += [(f"c.Grading.{name}", f"c.Grading.{RENAMED_SETTINGS[name]}")
                  for name in sorted(config.Grading) if name in RENAMED_SETTINGS]
    return found


def grading_settings(config: Any) -> Any:
    """The `Grading` settings of a loaded configuration (nbgrader_config.py, the command line).
    A name that is no setting is an error (a typo must not silently grade with the default), as
    is a sandbox mode that is none, and an old spelling (`old_spellings`)."""
    from traitlets.config import Config

    known = set(Grading.class_trait_names(config=True))
    old = old_spellings(config, known) if config is not None else []
    if old:
        raise ValueError(f"nbgrader_config.py or the command line sets "
                         f"{', '.join(was for was, _ in old)}: that spelling is gone; write "
                         f"{', '.join(now for _, now in old)} instead")
    merged = Config()
    if config is not None and "Grading" in config:
        unknown = sorted(set(config.Grading) - known)
        if unknown:
            raise ValueError(f"nbgrader_config.py: no such grading setting: "
                             f"{', '.join('c.Grading.' + name for name in unknown)} "
                             f"(the settings: {', '.join(sorted(known))})")
        for name, value in config.Grading.items():
            merged.Grading[name] = value
    settings = Grading(config=merged)
    if settings.sandbox and settings.sandbox not in SANDBOX_MODES:
        raise ValueError(f"c.Grading.sandbox = {settings.sandbox!r} is not a mode: use "
                         f"{', '.join(SANDBOX_MODES)}")
    settings.limits()  # validated now, not when the first notebook is graded
    return settings


def course_settings(root: Path) -> Any:
    """The `Grading` settings of the course at `root` (its nbgrader_config.py)."""
    return grading_settings(course_config(root))


@dataclass(frozen=True)
class GradingConfig:
    """Everything a grading run needs to know, resolved once (see `load`) and passed down."""

    root: Path
    db_url: str  # absolute when SQLite
    course_id: str
    limits: Limits = field(default_factory=Limits)
    sandbox: str = ""  # c.Grading.sandbox ('' : MLMCOURSE_SANDBOX, else auto)
    workers: int | None = None  # local grading processes (None: one per core)
    scheduler: str | None = None  # a Dask scheduler's address, instead of local workers
    nbgrader: Any = field(default=None, repr=False, compare=False)  # nbgrader_config.py, loaded

    @classmethod
    def load(cls, root: Path, db_url: str | None = None, *, limits: Limits | None = None,
             workers: int | None = None, scheduler: str | None = None) -> GradingConfig:
        """The configuration of the course at `root`: nbgrader_config.py is read here, once
        (`limits`: these instead of its `c.Grading` limits)."""
        root = Path(root).resolve()
        loaded = course_config(root)
        settings = grading_settings(loaded)
        return cls(
            root=root,
            db_url=gradebook_url(root, db_url, loaded),
            course_id=course_id(root, loaded),
            limits=limits or settings.limits(),
            sandbox=settings.sandbox,
            workers=workers,
            scheduler=scheduler,
            nbgrader=loaded,
        )

    @classmethod
    def from_nbgrader(cls, loaded: Any, root: Path, db_url: str) -> GradingConfig:
        """The configuration nbgrader itself loaded (`nbgrader autograde`, the formgrader), by
        the rules `load` applies to nbgrader_config.py: one reading of the settings."""
        root = Path(root).resolve()
        settings = grading_settings(loaded)
        return cls(root=root, db_url=gradebook_url(root, db_url, loaded),
                   course_id=course_id(root, loaded), limits=settings.limits(),
                   sandbox=settings.sandbox, nbgrader=loaded)

    @classmethod
    def of(cls, course: GradingConfig | Path) -> GradingConfig:
        """`course` itself when it is a configuration, else the one of the course at that root
        (for callers that only know the folder: `make build`, tests)."""
        return course if isinstance(course, GradingConfig) else cls.load(course)

    def nbgrader_config(self) -> Any:
        """A private copy of nbgrader_config.py's settings, for one converter to extend."""
        from traitlets.config import Config

        return copy.deepcopy(self.nbgrader) if self.nbgrader is not None else Config()

    def gradebook(self) -> Any:
        """nbgrader's `Gradebook` on this run's database (use it as a context manager)."""
        from nbgrader.api import Gradebook

        tools_on_path()
        return Gradebook(self.db_url, self.course_id)


# ---- running nbgrader ---------------------------------------------------------------------------


def nbgrader_converter(cls: type, config: GradingConfig, settings: dict | None = None, *,
                       root: Path | None = None) -> Any:
    """An nbgrader converter (GenerateAssignment, GenerateFeedback...) for this course, in-process:
    the course's config, the run's database, and `settings` ({"Class.trait": value}) on top.

    `root`: another course directory to work in (a scratch copy of the course)."""
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    tools_on_path()
    merged = config.nbgrader_config()
    overrides = Config()
    overrides.CourseDirectory.root = str(root or config.root)
    overrides.CourseDirectory.db_url = config.db_url
    for key, value in (settings or {}).items():
        section, trait = key.split(".")
        overrides[section][trait] = value
    merged.merge(overrides)
    coursedir = CourseDirectory(config=merged)
    return cls(coursedir=coursedir, config=merged)


def run_converter(converter: Any, what: str) -> None:
    """Start an in-process nbgrader converter; raise with nbgrader's own log when it fails."""
    from nbgrader.utils import capture_log

    outcome = capture_log(converter)
    if not outcome.get("success"):
        log = outcome.get("log", "") + outcome.get("error", "")
        raise RuntimeError(f"nbgrader {what} failed:\n{log[-6000:]}")


def run_nbgrader(root: Path, *args: str, quiet: bool = True) -> None:
    """Run one nbgrader command in the course directory; fail loudly with its log."""
    command = [sys.executable, "-m", "nbgrader", *args]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, env=tool_env())
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise RuntimeError(f"nbgrader {' '.join(args)} failed (exit {done.returncode})")
    if not quiet:
        sys.stdout.write(done.stdout)
