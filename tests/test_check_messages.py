"""The check helpers' messages name what a student has to fix (issue 42): an error test names every
bad input the function did not reject, at once; a wrong error of a known kind (reading a 'meta'
tensor) says its cause; a mean that counts sites with a literal -100 is told so; a backward that
builds a float32 gradient for float64 logits is told so, in words, not by torch's traceback; a
log-probability whose graph is cut in the middle is told which part was cut. Each message fires
for its mistake and stays silent for a right answer. (The samples' messages as the
grader gives them: tests/test_messages.py.)"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from mlmcourse.teaching.backward_mistakes import FLOAT32_GRADIENT
from mlmcourse.teaching.checks import (
    CUT_OFF_THE_GRAPH,
    CheckFailed,
    expect_backward_agrees,
    expect_close,
    expect_raises,
    expect_rejects,
    expect_target_log_probs_gradient,
    literal_ignore_index_mistakes,
)

VALID = {"tokens": torch.tensor([[5, 6]]), "other": torch.tensor([[1, 2]])}
BAD = {
    "a negative token": {"tokens": torch.tensor([[5, -1]])},
    "tokens on the 'meta' device": {"tokens": torch.tensor([[5, 6]]).to("meta")},
    "other on the 'meta' device": {"other": torch.tensor([[1, 2]]).to("meta")},
    "tokens 1-D": {"tokens": torch.tensor([5, 6])},
}
META_CAUSE = "A tensor on the 'meta' device has a shape and a dtype but no values"


def checks_all(tokens, other):
    """A right answer: structure and devices first, values last."""
    if tokens.dim() != 2 or tokens.device != other.device:
        raise ValueError("tokens must be 2-D and on the device of other")
    if bool((tokens < 0).any()):
        raise ValueError("tokens must be >= 0")


def values_first(tokens, other):
    """Reads the values before it looks at the devices, and never checks the rank."""
    if bool((tokens < 0).any()):
        raise ValueError("tokens must be >= 0")
    if tokens.device != other.device:
        raise ValueError("tokens and other must be on one device")


def failure(check) -> str:
    with pytest.raises(CheckFailed) as failed:
        check()
    return str(failed.value)


def test_a_right_answer_passes_every_bad_input():
    expect_rejects(checks_all, VALID, BAD)


def test_every_bad_input_not_rejected_is_named_in_one_message():
    message = failure(lambda: expect_rejects(values_first, VALID, BAD))
    first, more, *rest = message.splitlines()
    assert first == ("tokens on the 'meta' device: expected ValueError, got RuntimeError: "
                     "Tensor.item() cannot be called on meta tensors")
    assert more == "1 more not rejected with ValueError:"
    assert rest == ["- nothing raised: tokens 1-D", f"{META_CAUSE}: check every tensor's "
                    ".device (and raise ValueError) before reading any values."]
    assert "a negative token" not in message and "other on the" not in message


def test_bad_inputs_that_fail_alike_are_listed_together_and_a_long_list_is_counted():
    bad = {f"case {n}": {"tokens": torch.tensor([[n, 6]])} for n in range(20)}
    message = failure(lambda: expect_rejects(checks_all, VALID, bad))
    assert message.splitlines() == [
        "case 0: expected ValueError, but nothing was raised",
        "19 more not rejected with ValueError:",
        "- nothing raised: " + "; ".join(f"case {n}" for n in range(1, 13)) + "; and 7 more"]


def test_an_unwritten_answer_is_reported_once():
    calls = []

    def stub(tokens, other):
        calls.append(tokens)
        raise NotImplementedError()

    message = failure(lambda: expect_rejects(stub, VALID, BAD))
    assert message == "a negative token: expected ValueError, got NotImplementedError: "
    assert len(calls) == 1


def test_a_single_wrong_error_on_a_meta_tensor_says_its_cause():
    meta = BAD["tokens on the 'meta' device"]["tokens"]
    message = failure(lambda: expect_raises(ValueError, lambda: values_first(meta, VALID["other"]),
                                            "tokens on meta"))
    assert message.splitlines()[1].startswith(META_CAUSE)
    expect_raises(ValueError, lambda: checks_all(meta, VALID["other"]), "tokens on meta")


def test_a_wrong_error_of_no_known_kind_gets_no_cause():
    def index_error(tokens, other):
        raise IndexError("index 3 is out of bounds")

    message = failure(lambda: expect_raises(ValueError, lambda: index_error(*VALID.values()),
                                            "a bad input"))
    assert message == "a bad input: expected ValueError, got IndexError: index 3 is out of bounds"


LOGITS = torch.randn(1, 3, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
CUSTOM = torch.tensor([[2, -1, -1]])


def mean_counting(labels, ignore_index, counted_with):
    """The mean of the per-site losses at `labels`, divided by the sites not `counted_with`."""
    total = F.cross_entropy(LOGITS.reshape(-1, 4), labels.reshape(-1), reduction="sum",
                            ignore_index=ignore_index)
    return total / (labels != counted_with).sum()


def test_a_mean_that_counts_sites_with_a_literal_minus_100_is_told_so():
    right = mean_counting(torch.tensor([[2, -100, -100]]), -100, -100)
    mistakes = literal_ignore_index_mistakes(LOGITS, CUSTOM, -1)
    hard_coded = mean_counting(CUSTOM, -1, -100)
    message = failure(lambda: expect_close(hard_coded, right, "ignore_index=-1", 1e-12,
                                           mistakes=mistakes))
    assert message == ("ignore_index=-1: it divides by the 3 sites whose label is not -100, not by "
                       "the 1 whose label is not ignore_index (-1): compare labels with the "
                       "ignore_index argument, never with a literal -100")
    expect_close(mean_counting(CUSTOM, -1, -1), right, "ignore_index=-1", 1e-12,
                 mistakes=mistakes)


def test_no_literal_mistake_where_it_would_give_the_right_mean():
    assert literal_ignore_index_mistakes(LOGITS, torch.tensor([[2, -100, -100]]), -100) == {}


GRAD_LABELS = torch.tensor([[1, -100, 3], [0, 0, -100]])
GRAD_LOGITS = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(0),
                          dtype=torch.float64)


def loss_whose_backward_writes_into(make_gradient):
    """The masked mean loss at GRAD_LABELS, as a function of the logits; its backward writes the
    selected rows' gradient into `make_gradient(rows, sites)`, a [sites, V] tensor it makes."""

    class Loss(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits):
            keep = GRAD_LABELS.reshape(-1) != -100
            rows = logits.reshape(-1, logits.shape[-1])[keep]
            targets = GRAD_LABELS.reshape(-1)[keep]
            ctx.save_for_backward(rows, targets, keep)
            ctx.shape = logits.shape
            own = rows.gather(1, targets.unsqueeze(1)).squeeze(1)
            return (torch.logsumexp(rows, dim=1) - own).sum() / len(targets)

        @staticmethod
        def backward(ctx, grad_output):
            rows, targets, keep = ctx.saved_tensors
            grad_rows = torch.softmax(rows, dim=1) - F.one_hot(targets, rows.shape[1])
            grad = make_gradient(rows, keep.numel())
            grad[keep] = grad_rows * grad_output / len(targets)
            return grad.reshape(ctx.shape)

    return Loss.apply


def test_a_backward_that_builds_a_float32_gradient_for_float64_logits_is_told_so():
    bare_zeros = loss_whose_backward_writes_into(lambda rows, n: torch.zeros(n, rows.shape[1]))
    message = failure(lambda: expect_backward_agrees(bare_zeros, GRAD_LOGITS, GRAD_LABELS))
    assert message == FLOAT32_GRADIENT
    assert "float32" in message and "new_zeros, zeros_like" in message
    from_saved = loss_whose_backward_writes_into(lambda rows, n: rows.new_zeros(n, rows.shape[1]))
    expect_backward_agrees(from_saved, GRAD_LOGITS, GRAD_LABELS)


def test_any_other_error_of_a_backward_is_raised_as_it_is():
    def fails(rows, n):
        raise RuntimeError("a bug of its own")

    with pytest.raises(RuntimeError, match="a bug of its own"):
        expect_backward_agrees(loss_whose_backward_writes_into(fails), GRAD_LOGITS, GRAD_LABELS)
    # A float16 gradient fails at float32 logits too: not the float32 gradient, so torch's error
    half = loss_whose_backward_writes_into(lambda rows, n: torch.zeros(n, rows.shape[1],
                                                                       dtype=torch.float16))
    with pytest.raises(RuntimeError, match="Double for the source"):  # the first error
        expect_backward_agrees(half, GRAD_LOGITS, GRAD_LABELS)


# Notebook 2's gradient check: log p(target) at [B, L] sites, 0.0 where the label is -100.
LOG_P_LOGITS = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(0),
                           dtype=torch.float64)
LOG_P_LABELS = torch.tensor([[1, -100, 3], [0, 2, -100]])


def log_probs_cut(cut_logsumexp=False, cut_target=False, zero_ignored=True, detach_all=False):
    """log p(target) as a student writes it, with one part of the graph cut (or none)."""

    def target_log_probs(logits, labels):
        selected = labels != -100
        safe = torch.where(selected, labels, torch.zeros_like(labels))
        target = logits.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
        norm = torch.logsumexp(logits, dim=-1)
        out = ((target.detach() if cut_target else target)
               - (norm.detach() if cut_logsumexp else norm))
        out = torch.where(selected, out, torch.zeros_like(out)) if zero_ignored else out
        return out.detach() if detach_all else out

    return target_log_probs


def gradient_failure(**cut) -> str:
    return failure(lambda: expect_target_log_probs_gradient(log_probs_cut(**cut), LOG_P_LOGITS,
                                                            LOG_P_LABELS))


def test_a_connected_log_probability_passes_and_prints_its_difference(capsys):
    expect_target_log_probs_gradient(log_probs_cut(), LOG_P_LOGITS, LOG_P_LABELS)
    assert "largest difference from the library's" in capsys.readouterr().out


def test_a_log_probability_cut_in_the_middle_is_told_which_part_was_cut():
    assert gradient_failure(cut_logsumexp=True).startswith(
        "the gradient of target_log_probs(...).sum(): only the one-hot of the target arrives: "
        "logsumexp is cut off the graph")
    assert gradient_failure(cut_target=True).startswith(
        "the gradient of target_log_probs(...).sum(): only -softmax arrives: the gathered "
        "target logit is cut off the graph")
    assert gradient_failure(zero_ignored=False).startswith(
        "the gradient of target_log_probs(...).sum(): it is not 0 at the ignored sites [0, 1] "
        "and [1, 2]: an ignored site's output must be the constant 0.0")
    assert gradient_failure(detach_all=True) == CUT_OFF_THE_GRAPH
