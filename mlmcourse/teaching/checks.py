"""Visible checks for the notebooks: one short line in a check cell, one plain message on failure.

Check cells and the public part of each graded cell (before its hidden block) call these, so a
cell stays two or three lines long and nbgrader's Validate dialog shows the student the message
right under the few lines that failed. Every `expect...` helper returns None, so a cell ending
with one of them echoes nothing. The hidden tests use the same helpers and the mechanics they
share (`call_unchanged`, `finite_differences`, the library-loss rule): they run in the trusted
kernel, where no student code runs, so what they import from here is written once, in public.
Each graded notebook's `setup` cell imports what its checks use. No solution code lives here:
only comparisons and mechanics (the reference computations stay in the hidden tests).
"""

from __future__ import annotations

import math
import re
import shlex
import sys
import textwrap

from mlmcourse.teaching.backward_mistakes import (  # the notebooks import them from here
    agree,
    backward_mistake,
    backward_repeat_mistake,  # noqa: F401
    finite_differences,  # noqa: F401
    gradient_of,
)
from mlmcourse.teaching.derivation import (  # noqa: F401  (copies released before they moved)
    compare_gradient_by_hand,
    compare_picked_log_probs,
    compare_row_log_prob,
    compare_shifted_softmax,
    compare_site_gradient,
)
from mlmcourse.teaching.misses import Miss, miss_of, misses_message


class CheckFailed(AssertionError):
    """A visible check failed; the message says what to fix."""


# nbgrader's Validate indents every line of an error by four spaces and cuts it at 87 characters,
# so a message shown in lines of at most this many characters reaches the student whole.
MESSAGE_WIDTH = 80


def message_lines(error: BaseException, width: int = MESSAGE_WIDTH) -> list[str]:
    """`CheckFailed: message` as lines of at most `width` characters, the message's own line
    breaks kept."""
    lines: list[str] = []
    for paragraph in f"{type(error).__name__}: {error}".splitlines():
        lines.extend(textwrap.wrap(paragraph, width, break_on_hyphens=False,
                                   subsequent_indent="  ") or [""])
    return lines


def _show_message_only(shell, etype, value, tb, tb_offset=None):
    """IPython's handler for a failed check: the message, without the traceback through this
    module (the check cell's own few lines already say what was called)."""
    lines = message_lines(value)
    shell._showtraceback(etype, value, lines)
    return lines


def _show_failed_checks_plainly() -> None:
    """In an IPython kernel, a failed check shows as its message alone, in short lines: in the
    notebook, in Validate's dialog and in `nbgrader validate`. The error's name and text (what
    the grader and the feedback read) stay as they are."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None and not shell.custom_exceptions:  # never displace someone else's
        shell.set_custom_exc((CheckFailed,), _show_message_only)


def _stderr_as_output_under_validate() -> None:
    """Under nbgrader's Validate (which reports every cell, `validate_all`), what the student's
    code writes to stderr shows as ordinary output from here on: Validate fails any cell that
    writes to stderr, the grader does not (a right answer that warns loses nothing), so a
    visible check that runs such an answer must not fail Validate either."""
    import os

    if os.environ.get("NBGRADER_VALIDATING"):
        sys.stderr = sys.stdout


# Each cell's outcome the last time it ran, by JupyterLab's cell id: the notebook's last cell
# says "not yet" while one of them ended in an error (a student who ran the cells one at a time
# past a failure, instead of Run All, which stops there).
_FAILED_LAST_RUN: dict[str, bool] = {}


def _remember_cell_outcome(result) -> None:
    # A cell is known by its id where the front end sends one (JupyterLab does); else by its
    # text (nbclient, nbconvert, Validate send none): a rerun of the same text replaces its
    # outcome, and an edited cell counts apart until the kernel restarts.
    info = getattr(result, "info", None)
    cell = getattr(info, "cell_id", None) or getattr(info, "raw_cell", None)
    if cell:
        _FAILED_LAST_RUN[cell] = not result.success


def _follow_cell_outcomes() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None and _remember_cell_outcome not in shell.events.callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", _remember_cell_outcome)


def cells_that_failed() -> int:
    """How many cells ended in an error the last time they ran (in this kernel, since the setup
    cell imported this module)."""
    return sum(_FAILED_LAST_RUN.values())


_show_failed_checks_plainly()
_stderr_as_output_under_validate()
_follow_cell_outcomes()


def expect(condition, message: str) -> None:
    """Fail with `message` unless `condition` holds."""
    if not condition:
        raise CheckFailed(message)


def expect_equal(got, expected, what: str, mistakes: dict | None = None) -> None:
    """Fail unless `got == expected` (tensors: same shape and every element equal). `mistakes`
    names known mistakes by what they give (see `expect_close`)."""
    if _equal(got, expected):
        return
    _name_a_known_mistake(got, what, mistakes, _equal)
    raise CheckFailed(f"{what}: expected {shown(expected)}, got {shown(got)}")


# What a message shows of a value: a small one whole (as repr writes it), a large one summarised
# (its size, dtype and first entries), so a function that returns millions of numbers makes a
# message of a few lines, not megabytes of feedback.
_WHOLE_ENTRIES = 200  # at most this many numbers (or items) are shown whole
_SHOWN_CHARS = 2_000  # and at most this many characters of any value


def shown(value) -> str:
    """`value` for a message: whole when small, else summarised (shape, dtype, a few entries)."""
    import reprlib

    import torch

    if isinstance(value, torch.Tensor):
        if value.numel() <= _WHOLE_ENTRIES:
            return _clipped(repr(value))
        first = value.detach().reshape(-1)[:6].tolist()
        return (f"a tensor of shape {tuple(value.shape)}, {value.dtype} ({value.numel()} "
                f"entries; the first {first} ...)")
    if _entries(value, _WHOLE_ENTRIES + 1) <= _WHOLE_ENTRIES:
        return _clipped(repr(value))
    brief = reprlib.Repr()
    brief.maxlevel, brief.maxstring, brief.maxother = 3, 80, 80
    brief.maxlist = brief.maxtuple = brief.maxdict = brief.maxset = 6
    unit = "characters" if isinstance(value, str | bytes) else "items"
    size = f" of {len(value)} {unit}" if hasattr(value, "__len__") else ""
    return _clipped(f"a {type(value).__name__}{size}: {brief.repr(value)}")


def _entries(value, stop: int) -> int:
    """How many leaves `value` holds (lists, tuples, sets, dicts walked), counting up to `stop`."""
    if isinstance(value, str | bytes):
        return len(value) // 10
    if not isinstance(value, list | tuple | set | frozenset | dict):
        return 1
    count = 0
    for item in (value.values() if isinstance(value, dict) else value):
        count += _entries(item, stop - count)
        if count >= stop:
            break
    return count


def _clipped(text: str) -> str:
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]} ... ({len(text)} chars)"


def _equal(got, expected) -> bool:
    same = got == expected
    if hasattr(same, "all"):
        same = getattr(got, "shape", None) == getattr(expected, "shape", None) and bool(same.all())
    return bool(same)


def _name_a_known_mistake(got, what: str, mistakes: dict | None, matches) -> None:
    """Fail with the first known mistake that explains `got`: each entry of `mistakes` maps the
    mistake, in words, to the value it gives or to a test of `got` (a callable)."""
    for mistake, gives in (mistakes or {}).items():
        if gives(got) if callable(gives) else matches(got, gives):
            raise CheckFailed(f"{what}: {mistake}")


def not_finite(got) -> bool:
    """For `mistakes`: the result holds nan or inf (an overflow or a log of 0)."""
    import torch

    return not bool(torch.isfinite(torch.as_tensor(got)).all())


def mean_mistakes(logits, labels, ignore_index: int = -100) -> dict:
    """For `mistakes`: the two wrong means of the per-site losses of `logits` [B, L, V] at
    `labels` [B, L], by what they give (the library computes the per-site losses)."""
    import torch.nn.functional as F

    V = logits.shape[-1]
    per_site = F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1), reduction="none",
                               ignore_index=ignore_index).view(labels.shape)
    counts = (labels != ignore_index).sum(dim=1)
    return {
        f"it divides by every site (B*L = {labels.numel()}), not by the "
        f"{int(counts.sum())} selected ones": per_site.sum() / labels.numel(),
        "it averages the per-sequence means, so a site in a sparsely selected sequence weighs "
        "more; divide the sum over all selected sites by their number":
            (per_site.sum(dim=1) / counts.clamp(min=1)).mean(),
    }


def literal_ignore_index_mistakes(logits, labels, ignore_index: int) -> dict:
    """For `mistakes`: the mean a loss gives when it counts the sites of `labels` with a literal
    -100 in place of `ignore_index` (the per-site losses of `logits` from the library)."""
    import torch.nn.functional as F

    V = logits.shape[-1]
    per_site = F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1), reduction="none",
                               ignore_index=ignore_index)
    selected, counted = int((labels != ignore_index).sum()), int((labels != -100).sum())
    if not counted or counted == selected:
        return {}
    return {f"it divides by the {counted} sites whose label is not -100, not by the {selected} "
            f"whose label is not ignore_index ({ignore_index}): compare labels with the "
            "ignore_index argument, never with a literal -100": per_site.sum() / counted}


def expect_close(got, expected, what: str, tolerance: float = 1e-6,
                 mistakes: dict | None = None) -> None:
    """Fail unless numbers (or same-shaped tensors) agree to within `tolerance`.

    `mistakes` maps a known mistake, in words, to the value it would give (or to a test of the
    result, a callable): a result it explains is told that mistake, not a bare difference."""
    error = _distance(got, expected, what)
    if math.isfinite(error) and error <= tolerance:
        return
    _name_a_known_mistake(got, what, mistakes,
                          lambda got, wrong: _distance(got, wrong, what) <= tolerance)
    raise CheckFailed(f"{what}: off by {error:.3g} (tolerance {tolerance:g})")


def _distance(got, expected, what: str) -> float:
    """The largest absolute difference (a shape mismatch fails here, naming both shapes)."""
    if hasattr(got, "shape") or hasattr(expected, "shape"):
        expect(getattr(got, "shape", None) == getattr(expected, "shape", None),
               f"{what}: expected shape {tuple(expected.shape)}, got "
               f"{tuple(getattr(got, 'shape', ()))}")
        return (got.double() - expected.double()).abs().max().item() if got.numel() else 0.0
    return abs(float(got) - float(expected))


def expect_raises(errors, call, what: str, needs_message: bool = False) -> None:
    """Fail unless `call()` raises one of `errors` (an exception class or a tuple of them); with
    `needs_message`, one whose message says something (the contract's "says what is wrong").
    A wrong error of a known kind names its cause on a line of its own."""
    miss = miss_of(errors, call, needs_message)
    if miss:
        raise CheckFailed("\n".join(filter(None, (f"{what}: {miss.account}", miss.cause))))


def expect_accepted(call, what: str, advice: str = "", errors=Exception):
    """`call()`'s value, for a call on valid input. An error of `errors` it raises fails as
    `what (Error: its first line): advice`; NotImplementedError always shows as it is (an
    unwritten answer), and errors not in `errors` go through unchanged."""
    try:
        return call()
    except NotImplementedError:
        raise
    except errors as error:
        first_line = (str(error).strip().splitlines() or [""])[0]
        message = f"{what} ({type(error).__name__}: {first_line})"
        raise CheckFailed(f"{message}: {advice}" if advice else message) from None


def expect_rejects(function, valid: dict, bad: dict[str, dict], errors=ValueError) -> None:
    """Fail unless `function` rejects every bad input, naming each one it does not.

    `valid` holds a valid call's arguments by name, in order; each entry of `bad` names a kind of
    bad input and the arguments it replaces. The call is positional, as the hidden tests make it,
    so a student who renames a parameter loses nothing here. Every bad input is tried, so one
    message lists all a student has to fix: the first in full, the others grouped by what they
    raised instead (an unwritten answer stops at the first)."""
    misses: dict[str, Miss | None] = {}
    for what, changes in bad.items():
        unknown = sorted(set(changes) - set(valid))
        if unknown:
            raise TypeError(f"expect_rejects: {what!r} replaces unknown arguments {unknown}")
        args = [changes.get(name, value) for name, value in valid.items()]
        miss = misses[what] = miss_of(errors, lambda args=args: function(*args))
        if miss and miss.unwritten:
            break
    misses = {what: miss for what, miss in misses.items() if miss}
    if misses:
        raise CheckFailed(misses_message(misses, errors))


def expect_backward_agrees(loss_of, logits, labels, ignore_index: int = -100) -> None:
    """Fail, naming the cause, unless the backward agrees with the student's own forward."""
    mistake = backward_mistake(loss_of, logits, labels, ignore_index)
    expect(mistake is None, mistake)


def expect_grad_output_used(loss_of, logits, scale: float = 2.5) -> None:
    """Fail unless `(scale * loss).backward()` gives `scale` times the gradient of the loss: a
    backward must multiply by the grad_output it receives (1 for loss.backward() alone)."""
    once, scaled = gradient_of(loss_of, logits), gradient_of(loss_of, logits, scale)
    expect(once is not None and scaled is not None, "backward() must give logits a gradient")
    if agree(scaled, once) and once.abs().max().item() > 0:
        raise CheckFailed(f"your backward ignores grad_output: ({scale} * loss).backward() gives "
                          "the same gradient as loss.backward(), where the chain rule wants "
                          f"{scale} times it")
    expect(agree(scaled, scale * once),
           f"({scale} * loss).backward() must give {scale} times the gradient of loss.backward()")


CUT_OFF_THE_GRAPH = (
    "no gradient reached logits: did you use .item(), .detach(), numpy, a Python float or "
    "torch.tensor(...) in the middle? Keep every step a torch operation on logits")


def expect_target_log_probs_gradient(target_log_probs, logits, labels,
                                     ignore_index: int = -100) -> None:
    """Notebook 2's check of "keep it differentiable": a backward through
    `target_log_probs(logits, labels).sum()` (float64 `logits` [B, L, V]) must give the library's
    gradient of the same sum, within 1e-10. Prints the largest difference; a wrong gradient is
    named by what it gives: none at all (a detached result), a gradient at ignored sites, or a
    middle cut off the graph (only the one-hot arrives when logsumexp is detached, only -softmax
    when the gathered target logit is)."""
    import torch
    import torch.nn.functional as F

    leaf = logits.detach().clone().requires_grad_(True)
    ignored = labels == ignore_index
    library = -F.cross_entropy(leaf.reshape(-1, leaf.shape[-1]), labels.reshape(-1),
                               reduction="sum", ignore_index=ignore_index)
    (expected,) = torch.autograd.grad(library, leaf)  # before the student's function runs
    softmax_part = torch.softmax(leaf.detach(), dim=-1) * ~ignored.unsqueeze(-1)
    yours = target_log_probs(leaf, labels).sum()
    expect(yours.requires_grad, CUT_OFF_THE_GRAPH)
    yours.backward()
    expect(leaf.grad is not None, CUT_OFF_THE_GRAPH)
    print(f"gradient of target_log_probs(...).sum(): largest difference from the library's "
          f"{(leaf.grad - expected).abs().max().item():.1e} (tolerance 1e-10)")
    cut = "is cut off the graph (.item(), .detach() or a Python float on it?)"
    expect_close(leaf.grad, expected, "the gradient of target_log_probs(...).sum()", 1e-10,
                 mistakes={
                     f"it is not 0 at the ignored {_sites(ignored)}: an ignored site's output "
                     "must be the constant 0.0 (overwrite it with torch.where, as in Step 6)":
                         lambda got: bool(ignored.any()) and got[ignored].abs().max().item() > 0,
                     f"only the one-hot of the target arrives: logsumexp {cut}":
                         expected + softmax_part,
                     f"only -softmax arrives: the gathered target logit {cut}": -softmax_part})


def _sites(where) -> str:
    """'sites [0, 1] and [1, 2]' (or 'site [0, 1]') for the True entries of a [B, L] mask."""
    named = [f"[{b}, {t}]" for b, t in where.nonzero().tolist()]
    if len(named) == 1:
        return f"site {named[0]}"
    return f"sites {', '.join(named[:-1])} and {named[-1]}"


def visible_checks_passed(notebook: str, points: int) -> None:
    """The last cell of a graded notebook: what Validate ran, what it did not, and how to run the
    hidden tests on this very file, wherever it lives."""
    from pathlib import Path

    path = Path.cwd() / f"{notebook}.ipynb"
    notes, error_tests, graded = _read_saved(path)
    for note in notes:
        print(f"Note: {note}.")
    failed = cells_that_failed()
    if failed:
        print(f"Not yet: {failed} cell(s) above ended in an error the last time they ran. Fix "
              "them (each error's message says what is wrong), then run the whole notebook "
              "again (Run All) before you submit.")
        return
    not_run = _graded_not_run(graded)
    if not_run:
        named = ", ".join(not_run[:3]) + (", ..." if len(not_run) > 3 else "")
        print(f"Not yet: {len(not_run)} graded cell(s) above have not run since the kernel "
              f"started ({named}). Run the whole notebook (Run All): then this cell says whether "
              "every visible check passes.")
        return
    public = "a quick case of what it checks" + (
        ", and for the error tests one bad input of every kind the hidden tests try"
        if error_tests else "")
    said = (f"Every visible check passes. Validate runs these checks and the public part of each "
            f"graded cell: {public}. It does not run the hidden tests, which decide the {points} "
            "points of this notebook when it is graded.")
    print(textwrap.fill(said, 86))
    print("Working on your own with the course's repository? Run the hidden tests on this file:\n"
          f"    {shlex.quote(sys.executable)} -m mlmcourse check {shlex.quote(str(path))}")


def _read_saved(path) -> tuple[list[str], bool, dict[str, str]]:
    """From the file as last saved: how the grader reads its answers where one spans or shares
    several cells (a split cell, a copy kept above or as Markdown), whether it has error tests
    (a graded cell whose public part tries bad inputs with `expect_rejects`), and its graded
    cells (cell id: grade id)."""
    import nbformat

    from mlmcourse.course.cells import grade_id, is_graded, layout_notes, without_hidden_tests

    try:
        nb = nbformat.read(path, as_version=4)
        graded = [cell for cell in nb.cells if is_graded(cell)]
        return (layout_notes(nb),
                any("expect_rejects(" in without_hidden_tests(cell.source) for cell in graded),
                {cell.get("id", ""): grade_id(cell) for cell in graded if cell.get("id")})
    except Exception:  # noqa: BLE001  (not saved yet, or not readable: nothing to say)
        return [], False, {}


def _graded_not_run(graded: dict[str, str]) -> list[str]:
    """The grade ids of the graded cells this kernel has not run, where the front end names the
    cells it runs (JupyterLab sends each cell's id): a student who ran only part of the notebook
    (one Part, "Run Selected Cell and All Below") is not told that every check passes. Run All
    in nbconvert or Validate names no cell, and runs them all: nothing to say then."""
    if not any(cell in graded for cell in _FAILED_LAST_RUN):
        return []
    return [name for cell, name in graded.items() if cell not in _FAILED_LAST_RUN]


def call_unchanged(function, *args, **kwargs):
    """`function(*args, **kwargs)`'s value; fail if the call changed any tensor it was given.

    The first two positional arguments are named logits and labels in the message (notebooks 2
    and 3), the others by position or keyword. Tensors on the 'meta' device hold no values."""
    import torch

    names = ["logits", "labels"]
    given = [(names[i] if i < 2 else f"argument {i + 1}", value) for i, value in enumerate(args)]
    given += list(kwargs.items())
    before = [(name, value, value.detach().clone()) for name, value in given
              if isinstance(value, torch.Tensor) and value.device.type != "meta"]
    try:
        return function(*args, **kwargs)
    finally:
        for name, value, copy in before:
            if not torch.equal(value.detach(), copy):
                advice = (", and never hide a bad result by editing the labels"
                          if name == "labels" else "")
                raise CheckFailed(f"your function changed the {name} it was given: never write "
                                  f"into the caller's tensors (work on a copy{advice})")


# The dispatcher operators behind the library losses of notebooks 2 and 3 (every log-softmax:
# torch., F., torch.special., the method, nn.LogSoftmax, a saved reference, torch.ops.aten...;
# and every NLL loss: F.nll_loss, F.cross_entropy, the nn modules), whatever name the student's
# code reached them by, each with what it is in words.
_LOG_SOFTMAX = "a library log-softmax (torch.log_softmax, F.log_softmax or the .log_softmax method)"
_NLL = "a library loss (F.cross_entropy, F.nll_loss, nn.CrossEntropyLoss or nn.NLLLoss)"
LIBRARY_LOSS_OPERATORS = {
    "aten::log_softmax": _LOG_SOFTMAX, "aten::_log_softmax": _LOG_SOFTMAX,
    "aten::special_log_softmax": _LOG_SOFTMAX, "aten::_log_softmax_backward_data": _LOG_SOFTMAX,
    "aten::cross_entropy_loss": _NLL, "aten::nll_loss": _NLL, "aten::nll_loss_nd": _NLL,
    "aten::nll_loss_forward": _NLL, "aten::nll_loss_backward": _NLL, "aten::nll_loss2d": _NLL,
    "aten::nll_loss2d_forward": _NLL, "aten::nll_loss2d_backward": _NLL,
}


def expect_no_library_loss(call, what: str) -> None:
    """Fail if `call()` runs a library log-softmax or NLL loss (the exercise of notebooks 2 and
    3), under whatever name: the operators it dispatches in this process are watched, forward and
    backward alike. Advice for the student's own kernel (Validate): under grading the student's
    code runs in another process, which this mode does not see, and no point rests on it."""
    from torch.utils import _python_dispatch

    class _Watch(_python_dispatch.TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ran: set[str] = set()

        def __torch_dispatch__(self, op, types, args=(), kwargs=None):
            self.ran.add(op._schema.name)
            return op(*args, **(kwargs or {}))

    with _Watch() as watch:
        call()
    used = sorted(watch.ran & LIBRARY_LOSS_OPERATORS.keys())
    kinds = " and ".join(dict.fromkeys(LIBRARY_LOSS_OPERATORS[name] for name in used))
    expect(not used, f"{what} ran {', '.join(used)}, {kinds}, under whatever name your code "
                     "calls it: build the loss from torch.logsumexp and gather yourself")


def expect_runs(call, what: str, advice: str = "", causes: dict[str, str] | None = None):
    """`call()`'s value; an error it raises becomes the plain message `what: raised ...`, with
    `advice` on its own line (the cause a student should look for). `causes` maps a regular
    expression to the advice said instead when it matches the error (`Name: message`): the first
    that matches."""
    try:
        return call()
    except Exception as error:  # noqa: BLE001 - any error of the checked code, reported plainly
        raised = f"{type(error).__name__}: {error}"
        advice = next((why for pattern, why in (causes or {}).items()
                       if re.search(pattern, raised)), advice)
        message = f"{what}: raised {raised}"
        raise CheckFailed(f"{message}\n{advice}" if advice else message) from None


def expect_returns(call, expected, what: str, advice: str = "") -> None:
    """Fail unless `call()` returns a value equal to `expected`. An error raised by the call
    becomes the plain message `what: raised ...` (not a traceback), and `advice`, when given,
    follows on its own lines. Put what failed first: it is what a student reads first."""
    try:
        got = call()
    except Exception as error:  # noqa: BLE001 - any error of the checked code, reported plainly
        message = f"{what}: raised {type(error).__name__}: {error}"
    else:
        try:
            expect_equal(got, expected, what)
            return
        except CheckFailed as failed:
            message = str(failed)
    raise CheckFailed(f"{message}\n{advice}" if advice else message)


# What notebook 4's train_step must do, one short line each (Validate shows lines of 80).
TRAIN_STEP_CHECKLIST = (
    "Check train_step against this list:\n"
    "1. from `generator`, in this order: picks, draws (float64, [B, L]), random_ids;\n"
    "2. selected = eligible & (picks < SELECTION_RATE);\n"
    "3. the center's logits from corrupted's left and right tokens (Step 4);\n"
    "4. optimizer.zero_grad(), loss.backward(), optimizer.step(), in this order;\n"
    "5. the W, optimizer and generator train_step is given, never new ones.")


def expect_same_training(losses, tables, reference, train_step=None) -> None:
    """Notebook 4: a loop built on the student's `train_step` gives the losses and tables of
    `reference` (a History of the same seed and lr) within 1e-12; otherwise name the first update
    that differs, the likely slips first, then the checklist of what to verify. Given
    `train_step`, a W that never changed is told apart by one probe update (see `_unchanged_W`)."""
    import torch

    n_steps = len(reference.train_loss)
    shapes_right = tuple(losses.shape) == (n_steps,) and tables.shape == reference.tables.shape
    expect(shapes_right, f"train_table should give {n_steps} losses and {n_steps + 1} tables, got "
           f"{list(losses.shape)} and {list(tables.shape)}")
    if torch.equal(tables[-1], tables[0]):
        raise CheckFailed(f"{_unchanged_W(train_step, reference, losses)}\n{TRAIN_STEP_CHECKLIST}")
    for step in range(n_steps):
        same_loss = abs(losses[step].item() - reference.train_loss[step].item()) <= 1e-12
        same_table = torch.allclose(tables[step + 1], reference.tables[step + 1],
                                    rtol=0, atol=1e-12)
        if not (same_loss and same_table):  # at W = 0 a wrong draw shows in W first
            likely = "1 to 3, the draws and the logits" if step == 0 else "4 and 5"
            raise CheckFailed(f"update {step + 1} is the first that differs from the run: the "
                              f"usual slips are points {likely}.\n{TRAIN_STEP_CHECKLIST}")


def _unchanged_W(train_step, reference, losses) -> str:
    """Why W never changed. One probe update from a fresh W, with a hook that notes a backward
    reaching it, tells three slips apart: no gradient reaches the W given (a W of its own made
    inside, or no backward()); step() before backward() (or no step()) leaves this update's
    gradient in W.grad when train_step returns; zero_grad() between backward() and step()
    leaves none there."""
    import torch

    reached = gradient_left = None
    if train_step is not None:
        W = torch.zeros_like(reference.tables[0]).requires_grad_(True)
        hits = []
        W.register_hook(lambda grad: hits.append(1))  # runs when a backward reaches this W
        train_step(W, torch.optim.Adam([W], lr=0.08), torch.Generator().manual_seed(0))
        reached, gradient_left = bool(hits), W.grad is not None and bool(W.grad.abs().sum() > 0)
    if reached is False:  # the loss at ln V says it scores a zero table: one made inside
        V = reference.tables.shape[-1]
        stuck = bool(((losses - math.log(V)).abs() < 1e-9).all())
        return ("train_step must update the W it was given: did it create its own "
                "(W = torch.zeros(...)) inside? No gradient reached the W given"
                + (f", and the loss stayed at ln {V} = {math.log(V):.4f}" if stuck else "")
                + ": read the logits from that W and call loss.backward() (points 3 to 5).")
    if gradient_left:
        return ("W never changed, yet train_step leaves a gradient in W.grad: step() ran before "
                "backward() (or not at all), so step() never found a gradient; call "
                "optimizer.step() after loss.backward() (point 4).")
    if gradient_left is False:
        return ("W never changed, and train_step leaves no gradient in W.grad: zero_grad() ran "
                "after backward(), so step() found none; zero_grad() goes before backward() "
                "(point 4).")
    return ("W never changed: step() found no gradient in W.grad; the order is zero_grad(), "
            "backward(), step() (point 4).")
