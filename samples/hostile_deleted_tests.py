"""Hard-codes -100 for unselected labels, and deletes every graded test cell from its notebook."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "labels = torch.full_like(tokens, ignore_index)",
                "labels = torch.full_like(tokens, -100)",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 21}


def transform(name, nb):
    """Drop the graded cells (and their hidden tests) from the submitted notebook."""
    nb.cells = [cell for cell in nb.cells if not cell.metadata.get("nbgrader", {}).get("grade")]
