"""Hard-codes -100 for unselected labels, and rewrites every test and check cell to print 'ok'."""

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
    """Every locked code cell (checks and hidden tests) becomes a cell that only prints 'ok'."""
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("locked") and meta.get("grade_id") != "setup":
            cell.source = 'print("ok")'
