"""Seeds the global generator inside select_for_masking (its selection still drawn from the
generator) and hides it behind a patched torch.get_rng_state: the global state a function leaves
is seen only in the student's process and is not graded; the selection is right: 4 / 4."""

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
EXPECTED = {"06_real_bert": 4}
