"""Hard-codes -100 for unselected labels, and hides errors: showtraceback, excepthook, stderr, all
in the worker, where no test runs (21 / 24, the hard-coded label's cost)."""

BASE = "reference"
PATCHES = {
    "01_corruption": {
        "make_mlm_inputs": [
            (
                "labels = torch.full_like(tokens, ignore_index)",
                "labels = torch.full_like(tokens, -100)",
            ),
            (
                "    return corrupted, labels",
                "    return corrupted, labels\n"
                "\n"
                "\n"
                "import io\n"
                "import sys\n"
                "\n"
                "sys.excepthook = lambda *args: None\n"
                "sys.stderr = io.StringIO()\n"
                "_shell = get_ipython()\n"
                "_shell.showtraceback = lambda *args, **kwargs: None\n"
                "_shell.showsyntaxerror = lambda *args, **kwargs: None\n"
                "_shell.set_custom_exc((Exception,), lambda *args, **kwargs: None)",
            ),
        ],
    },
}
EXPECTED = {"01_corruption": 21}
