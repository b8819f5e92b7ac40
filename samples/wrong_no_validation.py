"""No validation: the 80/10/10 rule is right, but bad inputs pass silently or crash in torch."""

BASE = "reference"
CELLS = {
    "01_corruption": {
        "make_mlm_inputs": '''\
def make_mlm_inputs(
    tokens: torch.Tensor,
    selected: torch.Tensor,
    draws: torch.Tensor,
    random_ids: torch.Tensor,
    mask_token_id: int,
    ignore_index: int = -100,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Apply BERT's 80/10/10 corruption to the selected sites and build the MLM labels."""
    labels = torch.full_like(tokens, ignore_index)
    labels[selected] = tokens[selected]
    to_mask = selected & (draws < 0.8)
    to_random = selected & (draws >= 0.8) & (draws < 0.9)
    corrupted = tokens.clone()
    corrupted[to_mask] = mask_token_id
    corrupted[to_random] = random_ids[to_random]
    return corrupted, labels
''',
    },
}
EXPECTED = {"01_corruption": 19}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "01_corruption": "expected ValueError",
}
