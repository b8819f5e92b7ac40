"""Notebook 1's try-firsts, checked for the student: Step 3's three conditions of the 80/10/10
rule, written by hand as boolean tensors, against the rule (and Step 8's fourth mix, the draws
a student writes for it, by their shares). The check never raises: it shows the
student's masks under the rule's, says whether every site meets exactly one condition, and names
the usual slips (a condition without `selected`, a closed interval at 0.8 or 0.9, a random
condition with no lower bound, a keep condition that forgets the unselected sites), so the
student can try again. The rule itself comes from `experiment.branch_of`, which the pictures of
notebook 1 use too."""

from __future__ import annotations

import torch

from mlmcourse.teaching.experiment import branch_of

NAMES = ("to_mask", "to_random", "to_keep")


def compare_conditions(to_mask, to_random, to_keep, selected, draws) -> None:
    """Step 3's check: the student's three masks (`to_mask`, `to_random`, `to_keep`, the cases
    of the equation) for `selected` and `draws` (1-D) against the rule; never raises."""
    yours = dict(zip(NAMES, (to_mask, to_random, to_keep), strict=True))
    if any(mask is None for mask in yours.values()):
        print("not written yet: add a cell under the one above (Esc, then B) that sets to_mask, "
              "to_random and to_keep, run it, then run this cell")
        return
    for name, mask in yours.items():
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            kind = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
            print(f"{name} is {kind}: a condition is a bool tensor, which a comparison such as "
                  "(draws < 0.8) gives, and &, | and ~ combine")
            return
        if mask.shape != selected.shape:
            print(f"{name} has shape {tuple(mask.shape)}, selected {tuple(selected.shape)}: "
                  "one entry per site")
            return
    branch = branch_of(draws)
    rule = {"to_mask": selected & (branch == 0), "to_random": selected & (branch == 1),
            "to_keep": ~selected | (branch == 2)}
    _show(yours, rule, selected, draws)
    slips = [slip for name in NAMES for slip in _slips(name, yours[name], rule[name], selected,
                                                         draws)]
    for slip in dict.fromkeys(slips):
        print("  " + slip)
    count = sum(mask.int() for mask in yours.values())
    if (count != 1).any():
        sites = [site for site, n in enumerate(count.tolist()) if n != 1]
        print(f"  site(s) {sites} meet {sorted(set(count[sites].tolist()))} of your conditions: "
              "the three must be disjoint and complete, every site meets exactly one")
    if not slips and (count == 1).all():
        print("All three agree with the rule, and every site meets exactly one of them.")


def _show(yours, rule, selected, draws) -> None:
    """Site by site: the inputs, then each condition as 0/1, with the rule's under any of the
    student's that differs from it."""
    def row(label, cells):
        print(f"{label:>17}" + "".join(f"{cell:>7}" for cell in cells))

    row("site", range(len(draws)))
    row("selected", [int(s) for s in selected.tolist()])
    row("draws", [f"{u:.2f}" for u in draws.tolist()])
    for name in NAMES:
        row(f"your {name}", yours[name].int().tolist())
        if not torch.equal(yours[name], rule[name]):
            row("the rule's", rule[name].int().tolist())


def _slips(name, mine, right, selected, draws) -> list[str]:
    """The usual slips that explain where `mine` differs from `right` (the rule's `name`)."""
    extra, missing = mine & ~right, right & ~mine
    slips = []
    if name != "to_keep" and (extra & ~selected).any():
        slips.append(f"{name} holds an unselected site: a site is corrupted only when it is "
                     "selected, so the condition starts with selected & (...)")
    if name == "to_mask" and (extra & (draws == 0.8)).any():
        slips.append("u = 0.8 exactly is the first RANDOM draw: the mask interval is u < 0.8, "
                     "not u <= 0.8")
    if name == "to_random" and (extra & (draws < 0.8)).any():
        slips.append("to_random also holds below 0.8, where to_mask holds: it needs both bounds, "
                     "(draws >= 0.8) & (draws < 0.9)")
    if name == "to_random" and (extra & (draws == 0.9)).any():
        slips.append("u = 0.9 exactly KEEPS the token: the random interval is u < 0.9")
    if name == "to_keep" and (missing & (draws == 0.9) & selected).any():
        slips.append("u = 0.9 exactly keeps the token: the keep condition is u >= 0.9, "
                     "not u > 0.9")
    if name == "to_keep" and (missing & ~selected).any():
        slips.append("to_keep leaves out the unselected sites: the third case of the equation is "
                     "'not selected, or u >= 0.9', since an unselected site keeps its token too "
                     "(~selected | (...))")
    if (extra | missing).any() and not slips:
        sites = [site for site, wrong in enumerate((extra | missing).tolist()) if wrong]
        slips.append(f"{name} differs from the rule at site(s) {sites}: read that case of the "
                     "equation again")
    return slips


def mix_shares_agree(draw, want: tuple[float, float, float]) -> bool:
    """Step 8's fourth mix: the student's `draw` (uniform draws in, draws for make_mlm_inputs
    out) on a million uniform draws; prints the shares it sends to [MASK], random and kept
    against `want` and says True once every share is within half a point. Never raises."""
    from mlmcourse.teaching.scratch import unwritten

    if unwritten("draw_80_20_0", draw, "line draw_80_20_0 = lambda u: ..."):
        return False
    u = torch.rand(1_000_000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    try:
        drawn = torch.as_tensor(draw(u.clone()), dtype=torch.float64)
    except Exception as err:  # the student's function: say what it raised, never raise
        print(f"your draw raised {type(err).__name__}: {err}")
        return False
    if drawn.shape != u.shape:
        print(f"your draw returned shape {list(drawn.shape)}: it should give one draw per input "
              f"draw, shape {list(u.shape)}")
        return False
    outside = ~((drawn >= 0) & (drawn < 1))
    shares = [(drawn < 0.8), (drawn >= 0.8) & (drawn < 0.9), (drawn >= 0.9) & (drawn < 1)]
    shares = [share.double().mean().item() for share in shares]
    print("your draws send " + " / ".join(f"{share:.1%}" for share in shares)
          + " to [MASK] / random / kept; wanted "
          + " / ".join(f"{share:.0%}" for share in want))
    if outside.any():
        print(f"  {outside.double().mean().item():.1%} of your draws lie outside [0, 1): "
              "make_mlm_inputs refuses them")
        return False
    agree = all(abs(share - target) <= 0.005 for share, target in zip(shares, want))
    if not agree:
        print("  which values of u should go to each branch, and where must their draw land?")
    return agree
