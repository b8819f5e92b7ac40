"""The command line: `python -m mlmcourse COMMAND` (build, grade, report, check, lab, ...)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from mlmcourse.course.layout import find_root, only_assignment


def cmd_build(args: argparse.Namespace) -> int:
    from mlmcourse.build.editions import STAGES, build, stale_stages

    root = find_root()
    stages = args.stages or list(STAGES)
    unknown = sorted(set(stages) - set(STAGES))
    if unknown:
        print(f"build: unknown stage(s) {unknown}; choose from {list(STAGES)}", file=sys.stderr)
        return 2
    if args.if_stale:
        stages = stale_stages(root, stages)
        if not stages:
            print("build: everything is up to date")
            return 0
    started = time.perf_counter()
    build(root, stages, full=args.full)
    print(f"build: done in {time.perf_counter() - started:.1f} s")
    return 0


def cmd_grade(args: argparse.Namespace) -> int:
    from mlmcourse.grader.class_run.grading import (
        GradingError,
        autograde,
        export_for_lms,
        generate_feedback,
        needs_a_look,
        read_scores,
        score_table,
        write_csv,
    )
    from mlmcourse.grader.config import GradingConfig, course_settings
    from mlmcourse.report.build import write_report

    config = GradingConfig.load(find_root(), args.db_url, workers=args.workers,
                                scheduler=args.scheduler)
    note = sample_class_note(config.root)
    if note:
        print(note, file=sys.stderr)
    started = time.perf_counter()
    failed = outcomes = None
    try:
        outcomes = autograde(config, args.student or None, assignments=args.assignment or None)
    except GradingError as err:
        failed, outcomes = err, err.outcome
    scores = read_scores(config)
    print(score_table(scores))
    look = needs_a_look(outcomes) if outcomes is not None else []
    if look:
        print("\nneeds a look:\n" + "\n".join(f"  {line}" for line in look))
    write_csv(scores, config.root / "grades.csv")
    lms = export_for_lms(config)
    page = write_report(config)
    if outcomes is not None and course_settings(config.root).class_feedback:
        # the class's lines come from the report just written: the feedback again, with them
        for outcome in outcomes:
            generate_feedback(config, [s for s in outcome.outcomes if s not in outcome.failed],
                              outcome.assignment)
    elapsed = time.perf_counter() - started
    print(f"\nwrote grades.csv, {lms.name} (nbgrader export, for the school's system), "
          f"feedback/ and the class report {page.relative_to(config.root)} ({elapsed:.1f} s)")
    if failed:
        print(f"\ngrade: {failed}", file=sys.stderr)
        return 1
    return 0


def cmd_new_class(args: argparse.Namespace) -> int:
    from mlmcourse.grader.class_run.new_class import new_class

    folder = Path(args.folder).expanduser()
    try:
        students = new_class(find_root(), folder, Path(args.roster) if args.roster else None)
    except (OSError, ValueError) as err:  # (a RosterError is a ValueError)
        print(f"new-class: {err}", file=sys.stderr)
        return 2
    folder = folder.resolve()
    print(f"new-class: a class in {folder} (only you can read it), {len(students)} students "
          f"of the roster in its gradebook.\n  Put the submissions in {folder}/submitted/"
          f"<student>/<assignment>/ (an assignment: a folder of its source/), then: "
          f"make grade CLASS={folder}")
    return 0


def sample_class_note(root: Path) -> str | None:
    """What `make grade` says when it grades the repository itself: the sample students."""
    if (root / "samples").is_dir():
        return ("grade: this is the course's repository, whose submitted/ holds the sample "
                "students (make build grades them). A class of your own: make new-class "
                "CLASS=~/bert_mlm_class ROSTER=roster.csv, then make grade CLASS=~/bert_mlm_class")
    return None


def cmd_report(args: argparse.Namespace) -> int:
    """The class report from the gradebook and autograded/ (after `make grade`, the formgrader's
    Autograde or manual grading alike)."""
    from mlmcourse.grader.config import GradingConfig
    from mlmcourse.report.build import write_report

    config = GradingConfig.load(find_root(), args.db_url)
    started = time.perf_counter()
    page = write_report(config, Path(args.out) if args.out else None)
    print(f"report: wrote {page} and its CSV files ({time.perf_counter() - started:.1f} s)")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """The hidden tests on a learner's own notebook; a file it cannot take costs one line that
    says what to do, never a traceback."""
    from mlmcourse.course.layout import find_course
    from mlmcourse.grader.processes.sandbox import SandboxRefused

    from .check import CheckError, all_passed, check_names, check_result, locate, report

    notebook = Path(args.notebook)
    try:
        root = find_course()
        result = check_result(root, notebook)
    except (CheckError, SandboxRefused, FileNotFoundError) as error:
        print(f"check: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    assignment, _ = locate(root, notebook)  # the notebook's own: names may repeat across them
    print(report(result, check_names(root, result.notebook, assignment)))
    return 0 if all_passed(result) else 1


def cmd_normalize(args: argparse.Namespace) -> int:
    from mlmcourse.course.layout import assignments, source_notebooks
    from mlmcourse.course.nbio import normalize_file

    root = find_root()
    paths = [Path(p) for p in args.paths] or [
        path for assignment in assignments(root) for path in source_notebooks(root, assignment)]
    for path in paths:
        if normalize_file(path):
            print(f"normalized {path}")
    return 0


def cmd_lab(args: argparse.Namespace) -> int:
    from mlmcourse import lab

    role = lab.TA if args.ta else lab.STUDENT
    return lab.main(find_root(), args.port, not args.no_browser, args.dry_run, role)


def cmd_install_config(args: argparse.Namespace) -> int:
    from mlmcourse.course.environment import (
        install_environment_config,
        install_tools_on_path,
        validate_front_config_path,
    )

    print(f"install-config: {install_environment_config()}")
    print(f"install-config: {validate_front_config_path()}")
    print(f"install-config: {install_tools_on_path()}")
    return 0


def cmd_site(args: argparse.Namespace) -> int:
    from mlmcourse.build import site

    return site.main(args.out)


def cmd_passback(args: argparse.Namespace) -> int:
    """Each student's score to the LMS's line item (LTI AGS); see docs/lms-admin.md."""
    from mlmcourse.grader.config import gradebook_url
    from mlmcourse.lms.keys import KeyFolderError
    from mlmcourse.lms.passback import (
        PassbackError,
        Platform,
        passback,
        read_lti_ids,
        read_names,
        read_scores,
        read_staff,
        sent_record,
    )

    root = find_root()
    settings = Path(args.config or root / "lti.json")
    ids_file = Path(args.ids) if args.ids else settings.parent / "lti-users.json"
    try:
        platform = Platform.load(settings)
        ids = read_lti_ids(ids_file)
        assignment = args.assignment or only_assignment(root)  # several: say which (--assignment)
        scores = read_scores(gradebook_url(root, args.db_url), assignment,
                             submitted=root / "submitted")
        outcome = passback(platform, scores, ids, sent_record(settings), dry_run=args.dry_run,
                           staff=read_staff(ids_file), names=read_names(ids_file))
    except (PassbackError, KeyFolderError, OSError, ValueError) as err:
        print(f"passback: {err}", file=sys.stderr)
        return 2
    for line in outcome.lines:
        print(("passback: dry run: " if args.dry_run else "passback: ") + line)
    if outcome.failed:
        print(f"passback: {len(outcome.failed)} student(s) not sent: "
              f"{', '.join(outcome.failed)}", file=sys.stderr)
        return 1
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    import mlmcourse.bench as benchmarks

    return benchmarks.main(args.what, page_only=args.page)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m mlmcourse", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)

    build = sub.add_parser("build", help="regenerate release/, notebooks/, samples and grading")
    build.add_argument("stages", nargs="*", help="release, notebooks, graded (default: all)")
    build.add_argument("--if-stale", action="store_true", help="only stages whose inputs changed")
    build.add_argument("--full", action="store_true",
                       help="regrade every sample (default: those whose inputs changed)")
    build.set_defaults(run=cmd_build)

    grade = sub.add_parser("grade", help="autograde submitted/, write feedback and grades.csv")
    grade.add_argument("--student", action="append", help="only this student (repeatable)")
    grade.add_argument("--assignment", action="append", help="only this assignment (repeatable; "
                       "default: every assignment of source/ with a submission)")
    grade.add_argument("--workers", type=int, default=None,
                       help="grading processes on this machine (default: one per core)")
    grade.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="a Dask scheduler to grade on, e.g. tcp://scheduler-host:8786")
    grade.add_argument("--db-url", default=None, metavar="URL",
                       help="the gradebook (default: nbgrader_config.py's db_url, gradebook.db), "
                            "e.g. postgresql://grader@dbhost/bert_mlm")
    grade.set_defaults(run=cmd_grade)

    new = sub.add_parser("new-class", help="a class of your own in FOLDER, apart from the "
                         "sample students: the notebooks, the course's config, the roster")
    new.add_argument("folder", help="where the class lives, outside the repository")
    new.add_argument("--roster", default=None, help="the class as a CSV: id, first_name, "
                     "last_name, email[, role]")
    new.set_defaults(run=cmd_new_class)

    report = sub.add_parser("report", help="the class report (reports/class-report.html) from "
                                           "the gradebook and autograded/")
    report.add_argument("--db-url", default=None, metavar="URL",
                        help="the gradebook (default: nbgrader_config.py's db_url)")
    report.add_argument("--out", default=None, help="another folder for the report")
    report.set_defaults(run=cmd_report)

    check = sub.add_parser("check", help="run the hidden tests on your own notebook (offline)")
    check.add_argument("notebook", help="path to your copy, e.g. work/bert_mlm/01_corruption.ipynb")
    check.set_defaults(run=cmd_check)

    normalize = sub.add_parser("normalize", help="strip outputs and unstable metadata in source/")
    normalize.add_argument("paths", nargs="*")
    normalize.set_defaults(run=cmd_normalize)

    lab = sub.add_parser("lab", help="JupyterLab on the student kit (work/), or --ta on the course")
    lab.add_argument("--ta", action="store_true",
                     help="a TA's lab: the whole course, with nbgrader's formgrader")
    lab.add_argument("--port", type=int, default=None)
    lab.add_argument("--no-browser", action="store_true")
    lab.add_argument("--dry-run", action="store_true", help="print the command, start nothing")
    lab.set_defaults(run=cmd_lab)

    install = sub.add_parser(
        "install-config", help="the course's Validate settings for this Python environment")
    install.set_defaults(run=cmd_install_config)

    site = sub.add_parser("site", help="the reading edition as HTML pages in build/site/")
    site.add_argument("--out", default=None, help="another folder for the pages")
    site.set_defaults(run=cmd_site)

    back = sub.add_parser("passback", help="each student's score to the LMS (LTI 1.3 AGS)")
    back.add_argument("--config", default=None, help="the platform's settings (default: lti.json "
                      "in the course root)")
    back.add_argument("--assignment", default=None, help="the assignment whose scores go to "
                      "lti.json's line item (default: the course's only one; a course of several "
                      "must name it)")
    back.add_argument("--ids", default=None, help="user name -> LTI sub: the launches' "
                      "lti-users.json (default, beside lti.json) or a CSV with columns user,sub")
    back.add_argument("--db-url", default=None, metavar="URL",
                      help="the gradebook (default: nbgrader_config.py's db_url)")
    back.add_argument("--dry-run", action="store_true", help="print what would be sent, send "
                      "nothing")
    back.set_defaults(run=cmd_passback)

    bench = sub.add_parser("bench", help="measure the figures of docs/numbers.md (and write it)")
    bench.add_argument("what", nargs="*", help="which benchmarks (default: all)")
    bench.add_argument("--page", action="store_true",
                       help="run nothing: write docs/numbers.md again from docs/numbers.json")
    bench.set_defaults(run=cmd_bench)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
