"""Correct, with IPython magics: a %%time cell with self-test asserts at the bottom (01), %config and a %time line after the definitions (02), @torch.no_grad() and a %timeit line (06)."""  # noqa: E501

BASE = "reference"

# 01: the whole answer cell under %%time (its first line), with self-tests on a tiny example
# at the bottom of the cell (asserts that call the function, and a loop of bad ints).
MAKE_MLM_INPUTS = '''\
%%time
def make_mlm_inputs(tokens, selected, draws, random_ids, mask_token_id, ignore_index=-100):
    """Apply BERT's 80/10/10 corruption to the selected sites and build the MLM labels."""
    tensors = [("tokens", tokens, {torch.int64}), ("selected", selected, {torch.bool}),
               ("draws", draws, {torch.float32, torch.float64}),
               ("random_ids", random_ids, {torch.int64})]
    for name, t, _ in tensors:
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} is not a tensor")
        if t.dim() != 2:
            raise ValueError(f"{name} is {t.dim()}-D, expected 2-D")
    for name, t, dtypes in tensors:
        if t.shape != tokens.shape:
            raise ValueError(f"{name} shape {tuple(t.shape)} differs from {tuple(tokens.shape)}")
        if t.dtype not in dtypes:
            raise ValueError(f"{name} has the wrong dtype {t.dtype}")
        if t.device != tokens.device:
            raise ValueError(f"{name} is on another device ({t.device})")
    if type(mask_token_id) is not int or mask_token_id < 0:
        raise ValueError(f"bad mask_token_id {mask_token_id!r}")
    if type(ignore_index) is not int or ignore_index >= 0:
        raise ValueError(f"bad ignore_index {ignore_index!r}")
    if (tokens < 0).any() or (random_ids < 0).any():
        raise ValueError("negative token or random id")
    if draws.isnan().any() or draws.isinf().any() or (draws < 0).any() or (draws >= 1).any():
        raise ValueError("draws must be finite and in [0, 1)")

    corrupted = tokens.clone()
    labels = torch.full_like(tokens, ignore_index)
    labels[selected] = tokens[selected]
    corrupted[selected & (draws < 0.8)] = mask_token_id
    randomised = selected & (0.8 <= draws) & (draws < 0.9)
    corrupted[randomised] = random_ids[randomised]
    return corrupted, labels


# self-tests on a tiny example
_c, _l = make_mlm_inputs(torch.tensor([[5, 6, 7, 8]]), torch.tensor([[True, True, True, False]]),
                         torch.tensor([[0.5, 0.85, 0.95, 0.1]]), torch.tensor([[9, 1, 2, 3]]), 4)
assert _c.tolist() == [[4, 1, 7, 8]], _c
assert _l.tolist() == [[5, 6, 7, -100]], _l
for _bad in (True, -1, 2.0, torch.tensor(3)):
    try:
        make_mlm_inputs(torch.tensor([[5]]), torch.tensor([[True]]), torch.tensor([[0.5]]),
                        torch.tensor([[1]]), _bad)
    except ValueError:
        pass
    else:
        raise AssertionError(f"mask_token_id={_bad!r} was accepted")
print("self-tests passed")
'''

# 02: %config as the cell's first line, %time on a call after the definition.
TARGET_LOG_PROBS = '''\
%config InlineBackend.figure_format = "retina"
def target_log_probs(logits, labels, ignore_index=-100):
    """Log-probability of each site's target label, and exactly 0.0 at ignored sites."""
    selected = labels != ignore_index
    gathered = logits.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    log_p = gathered - logits.logsumexp(dim=-1)
    return log_p.where(selected, torch.zeros_like(log_p))


%time _ = target_log_probs(torch.zeros(2, 3, 4), torch.tensor([[0, 1, -100], [3, -100, 2]]))
'''

MASKED_MEAN_NLL = '''\
def masked_mean_nll(logits, labels, ignore_index=-100):
    """Mean of -log p(target) over the selected sites, as a 0-dim tensor."""
    return target_log_probs(logits, labels, ignore_index).sum() / -(labels != ignore_index).sum()


%time _ = masked_mean_nll(torch.zeros(2, 3, 4), torch.tensor([[0, 1, -100], [3, -100, 2]]))
'''

# 06: @torch.no_grad() on the function, %timeit on a call after it.
SELECT_FOR_MASKING = '''\
@torch.no_grad()
def select_for_masking(tokens: torch.Tensor, special_ids, rate: float,
                       generator: torch.Generator) -> torch.Tensor:
    """Choose the positions to predict: each with probability `rate`, never a special token."""
    u = torch.rand(tokens.shape, generator=generator)
    ordinary = torch.ones(tokens.shape, dtype=torch.bool)
    for special_id in special_ids:
        ordinary &= tokens.ne(special_id)
    return u.lt(rate) & ordinary


%timeit -n 3 -r 1 select_for_masking(torch.zeros(4, 16, dtype=torch.int64), [0], 0.15, torch.Generator())
'''  # noqa: E501

CELLS = {
    # 01: %%time as the first line; self-test asserts at the bottom of the cell
    "01_corruption": {"make_mlm_inputs": MAKE_MLM_INPUTS},
    # 02: %config InlineBackend...; %time lines after the definitions
    "02_stable_log_softmax": {"target_log_probs": TARGET_LOG_PROBS,
                              "masked_mean_nll": MASKED_MEAN_NLL},
    # 06: @torch.no_grad() decorator; %timeit
    "06_real_bert": {"select_for_masking": SELECT_FOR_MASKING},
}
EXPECTED = {"01_corruption": 24, "02_stable_log_softmax": 15, "06_real_bert": 4}
