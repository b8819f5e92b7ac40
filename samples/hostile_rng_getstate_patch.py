"""Seeds the global generator inside select_for_masking and hides it behind a patched
torch.get_rng_state: the worker reads the global generator itself, taken before any student code
ran, so the change is seen: 3 / 4 (found by the scan's first red team)."""

BASE = "reference"
PATCHES = {
    "06_real_bert": {
        "select_for_masking": [
            (
                "def select_for_masking(",
                "_frozen_state = torch.get_rng_state()\n"
                "torch.get_rng_state = lambda: _frozen_state.clone()\n"
                "\n"
                "\n"
                "def select_for_masking(",
            ),
            (
                "    u = torch.rand(tokens.shape, generator=generator)",
                "    torch.manual_seed(generator.initial_seed())  # 'for reproducibility'\n"
                "    u = torch.rand(tokens.shape, generator=generator)",
            ),
        ],
    },
}
EXPECTED = {"06_real_bert": 3}
