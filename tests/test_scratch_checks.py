"""The try-first checks a learner runs on a line of their own (notebook 1's caller, one step
and fourth mix, notebook 2's gather on Part A's function and its lost digits, notebook 3's
connected zero, logsumexp, temperature and summed gradients): right answers agree, the usual
slips are named, and nothing raises."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from mlmcourse.teaching.caller import compare_caller
from mlmcourse.teaching.conditions import mix_shares_agree
from mlmcourse.teaching.connected_zero import compare_connected_zero
from mlmcourse.teaching.derivation import compare_picked_log_probs
from mlmcourse.teaching.kept_digits import compare_kept_digits
from mlmcourse.teaching.lse_gradient import compare_lse_gradient
from mlmcourse.teaching.one_step import compare_one_step
from mlmcourse.teaching.sum_gradient import compare_sum_gradient
from mlmcourse.teaching.temperature import compare_temperature_gradient

NUDGE = "run this cell again, unchanged, to have it named"


def second_look(capsys, check, *args) -> str:
    """What a check says the second time it sees the same wrong value: the first time it only
    nudges the learner to find the slip (and does not name it), the second it names it."""
    check(*args)
    first = capsys.readouterr().out
    assert NUDGE in first, first
    check(*args)
    return capsys.readouterr().out


def test_draws_for_80_20_0_agree_and_80_10_10_does_not(capsys):
    assert mix_shares_agree(lambda u: torch.where(u < 0.8, u, 0.8 + (u - 0.8) / 2), (0.8, 0.2, 0))
    assert not mix_shares_agree(lambda u: u, (0.8, 0.2, 0.0))
    assert "80.0% / 10.0% / 10.0% to [MASK] / random / kept" in capsys.readouterr().out


def test_draws_outside_the_unit_interval_an_error_or_none_are_said_in_words(capsys):
    assert not mix_shares_agree(lambda u: u + 0.5, (0.8, 0.2, 0.0))
    assert not mix_shares_agree(lambda u: u.sort(), (0.8, 0.2, 0.0))
    assert not mix_shares_agree(None, (0.8, 0.2, 0.0))
    said = capsys.readouterr().out
    assert "lie outside [0, 1)" in said and "your draw raised" in said
    assert "draw_80_20_0 is not written yet" in said


def caller(tokens, special_ids, g, rate=0.15, specials_allowed=False, global_draws=False, top=0):
    """Step 4's caller, right with the defaults; each argument makes one slip."""
    special = torch.isin(tokens, torch.tensor(special_ids))
    selected = (torch.rand(tokens.shape, generator=g) < rate) & (~special | specials_allowed)
    draws = torch.rand(tokens.shape) if global_draws else torch.rand(tokens.shape, generator=g)
    allowed = torch.tensor([i for i in range(1000) if specials_allowed or i not in special_ids])
    return selected, draws, allowed[torch.randint(0, len(allowed) - top, tokens.shape, generator=g)]


def test_the_caller_agrees_and_each_slip_is_named(capsys):
    """Notebook 1's Step 4: the right caller agrees; special sites selected or drawn, a rate far
    from 15%, the global random state, an id never drawn and a placeholder are each named."""
    compare_caller(caller)
    assert "yours agrees" in capsys.readouterr().out
    every_site = lambda t, s, g: caller(t, s, g, specials_allowed=True)  # noqa: E731
    for slip, wrong in (("special sites are selected", every_site),
                        ("random ids are special tokens", every_site),
                        ("not about 15%", lambda t, s, g: caller(t, s, g, rate=0.1)),
                        ("the same seed gave a different batch",
                         lambda t, s, g: caller(t, s, g, global_draws=True)),
                        ("torch.randint's high is exclusive",
                         lambda t, s, g: caller(t, s, g, top=1)),
                        ("caller is not written yet", None)):
        compare_caller(wrong)
        assert slip in capsys.readouterr().out, slip


def target_log_probs(logits, labels, ignore_index=-100):
    selected = labels != ignore_index
    picked = logits.gather(-1, torch.where(selected, labels, 0).unsqueeze(-1)).squeeze(-1)
    return torch.where(selected, picked - torch.logsumexp(logits, dim=-1), 0.0)


def test_the_gather_check_names_parts_function_and_its_placeholder(capsys):
    logits = torch.tensor([[[2.0, 0.0, 1.0], [0.5, 0.5, 3.0]]])
    labels = torch.tensor([[2, -100]])
    compare_picked_log_probs(target_log_probs, logits, labels)
    assert "both calls agree with float64 and labels is unchanged" in capsys.readouterr().out

    def placeholder(logits, labels, ignore_index=-100):
        raise NotImplementedError()

    placeholder.__name__ = "target_log_probs"
    compare_picked_log_probs(placeholder, logits, labels)
    assert capsys.readouterr().out.startswith("target_log_probs is not written yet")

    def writes_into_labels(logits, labels, ignore_index=-100):
        labels[labels == ignore_index] = 0
        return target_log_probs(logits, labels, ignore_index)

    compare_picked_log_probs(writes_into_labels, logits, labels)
    assert "your writes_into_labels wrote into labels" in capsys.readouterr().out
    assert labels.tolist() == [[2, -100]]


def test_the_gather_check_hints_at_the_mask_product_without_answering_its_question(capsys):
    """A draft that zeroes the ignored sites by multiplying with the mask passes the example but
    gives nan with a -inf at an ignored row: the check says an input breaks it, and leaves the
    input and its nan to the Predict question that follows."""
    logits = torch.tensor([[[2.0, 0.0, 1.0], [0.5, 0.5, 3.0]]])
    labels = torch.tensor([[2, -100]])

    def multiplies_by_the_mask(logits, labels, ignore_index=-100):
        selected = labels != ignore_index
        picked = logits.gather(-1, torch.where(selected, labels, 0)[..., None]).squeeze(-1)
        return (picked - torch.logsumexp(logits, dim=-1)) * selected

    compare_picked_log_probs(multiplies_by_the_mask, logits, labels)
    said = capsys.readouterr().out
    assert "a token it forbids" in said and "Predict question" in said
    assert "inf" not in said.split("unchanged", 1)[-1] and "nan" not in said


def test_the_temperature_gradient_agrees_and_each_slip_of_the_chain_rule_is_named(capsys):
    z, y, T = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64), 0, 2.0
    onehot = F.one_hot(torch.tensor(y), 3)
    compare_temperature_gradient((torch.softmax(z / T, dim=0) - onehot) / T, z, y, T)
    assert "they agree" in capsys.readouterr().out
    slips = {"T times too large": torch.softmax(z / T, dim=0) - onehot,
             "only the one-hot was divided by T": torch.softmax(z / T, dim=0) - onehot / T,
             "the softmax is taken at z": (torch.softmax(z, dim=0) - onehot) / T,
             "2b's answer, the gradient at T = 1": torch.softmax(z, dim=0) - onehot}
    for slip, value in slips.items():
        assert slip in second_look(capsys, compare_temperature_gradient, value, z, y, T), slip


def test_the_connected_zero_agrees_and_each_slip_is_named(capsys):
    """Notebook 3's Step 1: a sum over the selected rows divided by max(|S|, 1) is a connected
    zero; the early return's detached zero, a new leaf, 0 / 0, a row of zeros and a placeholder
    are each named, and logits.grad is left alone."""
    logits = torch.randn(2, 3, 6, dtype=torch.float64).requires_grad_(True)
    keep = torch.zeros(2, 3, dtype=torch.bool)
    rows = logits[keep]
    compare_connected_zero(rows.sum() / max(rows.shape[0], 1), logits)
    assert "yours is a connected zero" in capsys.readouterr().out
    for value, slip in ((torch.tensor(0.0), "no history"),
                        (torch.tensor(0.0, dtype=torch.float64, requires_grad=True), "new leaf"),
                        (rows.sum() / keep.sum(), "yours is nan"),
                        (rows.sum(dim=-1), "a 0-dim tensor"),
                        (None, "connected is not written yet")):
        compare_connected_zero(value, logits)
        assert slip in capsys.readouterr().out, slip
    assert logits.grad is None
    forbidden = logits.detach().clone()
    forbidden[0, 0, 0] = float("-inf")  # notebook 3's setup: a token the model forbids
    forbidden.requires_grad_(True)
    compare_connected_zero(forbidden.sum() * 0, forbidden)
    assert "the forbidden -inf times 0" in capsys.readouterr().out


def test_the_logsumexp_gradient_agrees_and_each_slip_is_named(capsys):
    """Notebook 3's 2a: the softmax, written from exp and a sum, agrees with central differences;
    exp alone, 1/s alone, log p, p (1 - p), a wrong shape and a placeholder are each named."""
    z = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)
    slopes = torch.softmax(z, dim=0)  # what central differences give, to 1e-10
    compare_lse_gradient(torch.exp(z) / torch.exp(z).sum(), slopes, z)
    said = capsys.readouterr().out
    assert "they agree" in said and "the entries sum to 1.000000\n" in said
    p = torch.softmax(z, dim=0)
    for value, slip in ((torch.exp(z), "yours is e^{z_i} alone"),
                        (torch.full_like(z, 1 / torch.exp(z).sum().item()), "1/s at every entry"),
                        (torch.log(p), "yours is log p_i"),
                        (p * (1 - p), "yours is p_i (1 - p_i)")):
        assert slip in second_look(capsys, compare_lse_gradient, value, slopes, z), slip
    compare_lse_gradient(p[:2], slopes, z)
    assert "a tensor of 3 entries" in capsys.readouterr().out
    compare_lse_gradient(None, slopes, z)
    assert "lse_gradient is not written yet" in capsys.readouterr().out


def test_the_summed_gradient_agrees_and_each_slip_is_named(capsys):
    """Notebook 3's 2e: the sum's gradient over 2c's batch agrees with central differences; the
    mean's answer, ignored rows written, selected rows only and a placeholder are each named."""
    logits = torch.randn(2, 4, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    labels = torch.tensor([[2, -100, 5, -100], [-100, 0, -100, -100]])
    keep = labels != -100
    right = torch.zeros_like(logits)
    right[keep] = torch.softmax(logits[keep], dim=-1) - F.one_hot(labels[keep], 6)
    compare_sum_gradient(right, logits, labels)
    assert "they agree" in capsys.readouterr().out
    every_row = torch.softmax(logits, dim=-1) - F.one_hot(labels.clamp(min=0), 6) * keep[..., None]
    for value, slip in ((right / 3, "that is 2c's answer, the mean's"),
                        (every_row, "the ignored rows are not 0"),
                        (right[keep], "a row per selected site only"),
                        (None, "sum_gradient is not written yet")):
        compare_sum_gradient(value, logits, labels)
        said = capsys.readouterr().out
        if NUDGE in said:  # a usual slip is named on the second look only
            assert slip not in said, slip
            compare_sum_gradient(value, logits, labels)
            said = capsys.readouterr().out
        assert slip in said, slip


def test_the_kept_digits_agree_and_each_slip_is_named(capsys):
    """Notebook 2's lost digits: the shift kept apart agrees to 1e-5 in float32; the worked line,
    a cast to float64 and a raw exp are each told apart, without the answer's formula."""
    z, y = torch.tensor([10000.0, 9999.0, 9990.0]), 0
    kept = lambda z, y: (z[y] - z.max()) - torch.log(torch.exp(z - z.max()).sum())  # noqa: E731
    compare_kept_digits(kept, z, y)
    assert "they agree, every digit kept" in capsys.readouterr().out
    said = second_look(capsys, compare_kept_digits,
                       lambda z, y: z[y] - torch.logsumexp(z, dim=0), z, y)
    assert "they differ" in said and "the worked line's value" in said and "z_y - m" not in said
    compare_kept_digits(lambda z, y: z.double()[y] - torch.logsumexp(z.double(), dim=0), z, y)
    assert "yours is float64" in capsys.readouterr().out
    compare_kept_digits(lambda z, y: z[y] - torch.log(torch.exp(z).sum()), z, y)
    assert "overflows float32" in capsys.readouterr().out


def test_one_step_agrees_and_each_slip_is_named(capsys):
    """Notebook 1's one update by hand: the row the site reads moves against its gradient; a
    step with the gradient, every row moved and a write into the caller's table are named."""
    gradient = torch.tensor([0.25, -0.75, 0.25, 0.25], dtype=torch.float64)
    cases = []
    for shown in (1, 3, 4):
        before = torch.zeros(5, 4, dtype=torch.float64)
        after = before.clone()
        after[shown] -= gradient
        cases.append((before, shown, gradient, after))

    def by_clone(E, shown, site_gradient):
        E = E.clone()
        E[shown] -= site_gradient
        return E

    def in_place(E, shown, site_gradient):
        E[shown] -= site_gradient
        return E

    compare_one_step(lambda E, shown, g: E - F.one_hot(torch.tensor(shown), len(E))[:, None] * g,
                     cases)
    assert capsys.readouterr().out.count("yours agrees with autograd's step") == 3
    compare_one_step(by_clone, cases)
    assert capsys.readouterr().out.count("yours agrees with autograd's step") == 3
    compare_one_step(lambda E, shown, g: E - g, cases)
    assert capsys.readouterr().out.count("yours moved every row") == 3
    compare_one_step(lambda E, shown, g: by_clone(E, shown, -g), cases)
    assert capsys.readouterr().out.count("with the gradient, not against it") == 3
    compare_one_step(in_place, cases)
    assert capsys.readouterr().out.count("yours wrote into the E it was given") == 3
    compare_one_step(None, cases)
    assert "one_step is not written yet" in capsys.readouterr().out
