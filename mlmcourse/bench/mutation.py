"""`bench mutation`: how many wrong versions of the reference solutions the hidden tests catch.

The mutants come from :mod:`mlmcourse.bench.mutants`. Each one that compiles is graded through
the real engine (:func:`mlmcourse.grader.engine.submission.grade_submission`, one process, so its
fork server stays warm): the reference submission with that one answer cell replaced. A mutant is
*killed* when it scores less than full marks.

A survivor is either *equivalent* (it behaves as the reference on every valid input: listed in
`mutants.EQUIVALENT` with the reason, judged by a person) or a *gap* in the tests. The score of a
function is killed / (mutants - equivalent survivors); the target is `TARGET_SCORE`.

``MLMCOURSE_MUTATION_SAMPLE=N`` grades only every N-th mutant of each function (a quick run);
``MLMCOURSE_MUTATION_FUNCTIONS=make_mlm_inputs,masked_lm_loss`` only those functions;
``MLMCOURSE_MUTATION_CLAUSES=1`` only the hand-written contract-clause mutants
(`CLAUSE_MUTANTS`: a type test too wide, a device left unchecked, a saved tensor changed in
place, a tensor made on the default device).
"""

from __future__ import annotations

import ast
import copy
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mlmcourse.bench.mutants import ROOT, Mutant, answer_cells, generate_mutants, select
from mlmcourse.course import nbio
from mlmcourse.course.cells import cells_by_grade_id, is_solution, without_solution_markers
from mlmcourse.course.layout import SERIES, source_notebooks
from mlmcourse.grader.limits import Limits

TARGET_SCORE = 0.95
# Short limits: a mutant that hangs is killed by the call timeout, not waited for.
LIMITS = Limits(call_timeout_s=4, student_time_s=30, cell_timeout_s=60)
STUDENT = "mutant"


# ---------------------------------------------------------------------------------------------
# Grading.


@dataclass
class Outcome:
    mutant: Mutant
    score: float
    max_score: float
    status: str
    failed: list[str] = field(default_factory=list)  # grade_ids of the tests that caught it
    seconds: float = 0.0

    @property
    def killed(self) -> bool:
        return self.score < self.max_score


def reference_submission(root: Path) -> dict[str, object]:
    """Each notebook as the reference student hands it in: the source with the solution
    markers removed (the engine takes only the answer cells from a submission)."""
    notebooks = {}
    for path in source_notebooks(root, SERIES):
        nb = nbio.read(path)
        for cell in nb.cells:
            if is_solution(cell):
                cell.source = without_solution_markers(cell.source)
        notebooks[path.stem] = nb
    return notebooks


class Grader:
    """Grades submissions that differ from the reference in one answer cell, in this process
    (the engine's fork server is started once and stays warm)."""

    def __init__(self, root: Path, workdir: Path, limits: Limits = LIMITS) -> None:
        self.root, self.limits = Path(root).resolve(), limits
        self.submission = Path(workdir) / "submission" / SERIES
        self.scratch = Path(workdir) / "scratch"
        self.reference = reference_submission(self.root)
        for name, nb in self.reference.items():
            nbio.write(nb, self.submission / f"{name}.ipynb")

    def grade(self, notebook: str, cell_id: str | None = None, source: str | None = None):
        """The engine's result for the reference with `cell_id` of `notebook` set to `source`
        (the reference itself when `cell_id` is None)."""
        from mlmcourse.grader.engine.submission import grade_submission

        nb = copy.deepcopy(self.reference[notebook])
        if cell_id is not None:
            cells_by_grade_id(nb)[cell_id].source = source
        path = self.submission / f"{notebook}.ipynb"
        nbio.write(nb, path)
        try:
            return grade_submission(self.root, STUDENT, self.submission, self.scratch,
                                    self.limits, notebooks=[notebook])[0]
        finally:
            nbio.write(self.reference[notebook], path)

    def check_reference(self, notebook: str) -> None:
        """The measure means nothing unless the reference itself gets full marks here."""
        result = self.grade(notebook)
        if result.score < result.max_score:
            failed = [c.grade_id for c in result.checks if not c.passed]
            raise RuntimeError(f"the reference scores {result.score:g} / {result.max_score:g} "
                               f"on {notebook} ({result.status}; failed {failed}): "
                               f"no mutation score can be measured")

    def outcome(self, mutant: Mutant) -> Outcome:
        started = time.monotonic()
        result = self.grade(mutant.notebook, mutant.grade_id, mutant.source)
        failed = [check.grade_id for check in result.checks if not check.passed]
        return Outcome(mutant, result.score, result.max_score, result.status, failed,
                       time.monotonic() - started)


def grade_mutants(mutants: list[Mutant], root: Path = ROOT, workdir: Path | None = None,
                  limits: Limits = LIMITS,
                  progress: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Grade each mutant through the engine (the reference of each notebook first)."""
    with tempfile.TemporaryDirectory(prefix="mlm-mutation-") as tmp:
        grader = Grader(root, Path(workdir or tmp), limits)
        for notebook in dict.fromkeys(m.notebook for m in mutants):
            grader.check_reference(notebook)
        outcomes = []
        for mutant in mutants:
            outcomes.append(grader.outcome(mutant))
            if progress is not None:
                progress(outcomes[-1])
        return outcomes


# ---------------------------------------------------------------------------------------------
# The report.


@dataclass
class FunctionScore:
    notebook: str
    function: str
    total: int = 0
    killed: int = 0
    equivalent: list[Outcome] = field(default_factory=list)
    gaps: list[Outcome] = field(default_factory=list)

    @property
    def score(self) -> float:
        counted = self.total - len(self.equivalent)
        return self.killed / counted if counted else 1.0


def function_scores(outcomes: list[Outcome]) -> list[FunctionScore]:
    scores: dict[str, FunctionScore] = {}
    for outcome in outcomes:
        mutant = outcome.mutant
        entry = scores.setdefault(mutant.function, FunctionScore(mutant.notebook, mutant.function))
        entry.total += 1
        if outcome.killed:
            entry.killed += 1
        elif mutant.equivalent_reason is not None:
            entry.equivalent.append(outcome)
        else:
            entry.gaps.append(outcome)
    return list(scores.values())


def _changed_line(mutant: Mutant) -> str:
    """The mutated statement, for the report: the first line of the mutant that is not in the
    reference (unparsed the same way)."""
    reference = next(source for _, cell, source in answer_cells(ROOT) if cell == mutant.grade_id)
    original = set(ast.unparse(ast.parse(reference)).split("\n"))
    changed = [line.strip() for line in mutant.source.split("\n") if line not in original]
    return changed[0] if changed else "(a line removed)"


def markdown_report(outcomes: list[Outcome], every: int = 1) -> str:
    scores = function_scores(outcomes)
    sampled = f" (every {every}th mutant of each function)" if every > 1 else ""
    lines = [f"Mutation score of the hidden tests{sampled}: killed / (mutants - equivalent); "
             f"target {TARGET_SCORE:.0%}.", "",
             "| notebook | function | mutants | killed | equivalent | gaps | score |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for entry in scores:
        lines.append(f"| {entry.notebook} | `{entry.function}` | {entry.total} | {entry.killed} "
                     f"| {len(entry.equivalent)} | {len(entry.gaps)} | {entry.score:.1%} |")
    total = sum(e.total for e in scores)
    killed = sum(e.killed for e in scores)
    equivalent = sum(len(e.equivalent) for e in scores)
    overall = killed / (total - equivalent) if total > equivalent else 1.0
    lines.append(f"| **all** | | {total} | {killed} | {equivalent} | "
                 f"{total - killed - equivalent} | {overall:.1%} |")
    gaps = [o for e in scores for o in e.gaps]
    if gaps:
        lines += ["", "Survivors that are gaps in the tests:", ""]
        lines += [f"- `{o.mutant.mutant_id}`: `{_changed_line(o.mutant)}`" for o in gaps]
    equivalents = [o for e in scores for o in e.equivalent]
    if equivalents:
        lines += ["", "Survivors judged equivalent:", ""]
        lines += [f"- `{o.mutant.mutant_id}`: {o.mutant.equivalent_reason}" for o in equivalents]
    wrongly = [o for o in outcomes if o.killed and o.mutant.equivalent_reason is not None]
    if wrongly:
        lines += ["", "Listed as equivalent but killed (remove from EQUIVALENT):", ""]
        lines += [f"- `{o.mutant.mutant_id}` (failed {', '.join(o.failed)})" for o in wrongly]
    return "\n".join(lines)


def main() -> int:
    """Print the table; exit status 1 when a function misses the target."""
    every = max(1, int(os.environ.get("MLMCOURSE_MUTATION_SAMPLE", "1") or 1))
    wanted = os.environ.get("MLMCOURSE_MUTATION_FUNCTIONS")
    functions = [name.strip() for name in wanted.split(",")] if wanted else None
    mutants = select(generate_mutants(ROOT), every, functions)
    if os.environ.get("MLMCOURSE_MUTATION_CLAUSES"):
        mutants = [m for m in mutants if m.operator.startswith("clause:")]
    print(f"grading {len(mutants)} mutants ...", file=sys.stderr, flush=True)

    def progress(outcome: Outcome) -> None:
        verdict = "killed" if outcome.killed else "SURVIVED"
        print(f"  {outcome.mutant.mutant_id}: {verdict} ({outcome.score:g}/"
              f"{outcome.max_score:g}, {outcome.seconds:.1f} s)", file=sys.stderr, flush=True)

    outcomes = grade_mutants(mutants, ROOT, progress=progress)
    print(markdown_report(outcomes, every))
    return 0 if all(e.score >= TARGET_SCORE for e in function_scores(outcomes)) else 1


if __name__ == "__main__":
    sys.exit(main())
