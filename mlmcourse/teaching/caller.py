"""Notebook 1's Step 4, checked for the student: the caller's side of `make_mlm_inputs` (the
selection, the draws and the random ids of a batch of real token ids, never a special token),
run on a large batch, with the usual slips named. The slips live here, not in the check cell,
so that the cell does not show the answer before the student writes one."""

from __future__ import annotations

from mlmcourse.teaching.scratch import kind_of, no_function_yet, raised

# About 20,000 eligible sites: a right rate lands within 0.25% of 15% (one standard deviation),
# so 1.5% off is six of them, and no right answer is told off.
RATE, SLACK = 0.15, 0.015


def _batch(vocabulary_size: int, special_ids: list[int]):
    """256 sequences of 128 ids: [CLS] first, [SEP] last, padding after a random length."""
    import torch

    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, vocabulary_size, (256, 128), generator=g)
    tokens[:, 0], tokens[:, -1] = special_ids[1], special_ids[2]
    lengths = torch.randint(40, 127, (256,), generator=g)
    tokens[torch.arange(128) >= lengths[:, None]] = special_ids[0]
    return tokens


def _slips(selected, rate, draws, random_ids, special, special_ids,
           vocabulary_size) -> list[str]:
    """What is wrong with one call's three tensors, in words (none when all is well); `rate` is
    the share of the eligible sites selected."""
    import torch

    slips = []
    if selected[special].any():
        slips.append(f"{int(selected[special].sum())} special sites are selected: [CLS], [SEP] "
                     "and padding are never predicted; leave out every site whose token is special")
    if abs(rate - RATE) > SLACK:
        slips.append(f"{rate:.1%} of the eligible sites are selected, not about 15%: select "
                     "each site whose token is not special with probability 0.15")
    if (draws < 0).any() or (draws >= 1).any() or not draws.is_floating_point():
        slips.append("the draws should be floats in [0, 1), one uniform number per site")
    if (random_ids < 0).any() or (random_ids >= vocabulary_size).any():
        slips.append(f"some random ids lie outside the vocabulary [0, {vocabulary_size})")
    specials = torch.isin(random_ids, torch.tensor(list(special_ids)))
    if specials.any():
        slips.append(f"{int(specials.sum())} random ids are special tokens: a random replacement "
                     "must be a real word, so draw it from the ids that are not special")
    else:
        slips.extend(_missing_ids(random_ids, special_ids, vocabulary_size))
    return slips


def _missing_ids(random_ids, special_ids, vocabulary_size) -> list[str]:
    """The allowed ids that never appear among about 33,000 random ids (each allowed id is
    expected about 33 times, so a right caller misses none), in words."""
    allowed = [i for i in range(vocabulary_size) if i not in special_ids]
    missing = [i for i in allowed if i not in set(random_ids.unique().tolist())]
    if not missing:
        return []
    if len(missing) <= 3 and missing == allowed[-len(missing):]:
        return [f"the largest allowed id{'s' if len(missing) > 1 else ''} ({missing[0]}"
                f"{' to ' + str(missing[-1]) if len(missing) > 1 else ''}) never appear"
                f"{'s' if len(missing) == 1 else ''}: torch.randint's high is exclusive "
                "(randint(0, n) draws 0 to n - 1), unlike Python's random.randint"]
    return [f"{len(missing)} allowed ids never appear among your random ids (for example "
            f"{missing[:3]}): draw each uniformly from every id that is not special"]


def compare_caller(caller, vocabulary_size: int = 1000,
                   special_ids: tuple[int, int, int] = (0, 101, 102)) -> None:
    """Step 4's your-turn, never raises: the student's `caller(tokens, special_ids, g)` on a
    batch of 256 x 128 ids with [CLS], [SEP] and padding (`special_ids`: padding, [CLS], [SEP]),
    checked for the selection (about 15% of the eligible sites, never a special one), the draws,
    random ids that are never special, and the same batch from the same seed."""
    import torch

    if no_function_yet("caller", caller, "def caller(tokens, special_ids, g): ...",
                       "tokens, the special ids and a torch.Generator", kind="function"):
        return
    tokens = _batch(vocabulary_size, list(special_ids))
    try:
        first = caller(tokens.clone(), list(special_ids), torch.Generator().manual_seed(1))
        again = caller(tokens.clone(), list(special_ids), torch.Generator().manual_seed(1))
    except Exception as err:  # the student's function: say what it raised, never raise
        print(f"your caller raised {raised(err)}")
        return
    if not (isinstance(first, tuple) and len(first) == 3
            and all(isinstance(t, torch.Tensor) and t.shape == tokens.shape for t in first)):
        print(f"your caller returned {kind_of(first)}: return (selected, draws, random_ids), "
              f"three tensors of the tokens' shape {list(tokens.shape)}")
        return
    selected, draws, random_ids = first
    if selected.dtype != torch.bool or random_ids.dtype != torch.int64:
        print(f"selected is {selected.dtype} and random_ids {random_ids.dtype}: "
              "make_mlm_inputs wants a bool selection and int64 ids")
        return
    special = torch.isin(tokens, torch.tensor(list(special_ids)))
    rate = selected[~special].double().mean().item()
    print(f"on 256 x 128 ids ({int((~special).sum())} eligible): {rate:.1%} of the eligible "
          f"sites selected, {int(selected[special].sum())} special ones")
    slips = _slips(selected, rate, draws, random_ids, special, special_ids, vocabulary_size)
    if not all(torch.equal(a, b) for a, b in zip(first, again)):
        slips.append("the same seed gave a different batch: draw every number from the "
                     "generator g you were given (torch.rand(..., generator=g))")
    for slip in slips:
        print("  " + slip)
    if not slips:
        print("yours agrees: about 15% of the eligible sites, no special one selected or drawn "
              "as a random id, and the same seed gives the same batch")
