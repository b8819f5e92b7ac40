"""The log-softmax of notebook 2 by `torch.sparse.log_softmax` on a sparse copy that keeps every
entry (an operator no list of library losses named): nothing gained over its twin (15 / 15)."""

from _library_loss import library_loss_patches

HELPER = (
    "def _hidden(function, *args, **kwargs):\n"
    "    z = args[0]\n"
    "    sites = torch.ones_like(z, dtype=torch.bool).nonzero().T\n"
    "    sparse = torch.sparse_coo_tensor(sites, z[tuple(sites)], z.shape)\n"
    "    return torch.sparse.log_softmax(sparse, kwargs['dim'] % z.dim()).to_dense()\n"
    "\n"
    "\n"
)
TWIN = "twin_rt4_library_loss"
BASE = "reference"
PATCHES = {"02_stable_log_softmax": library_loss_patches(HELPER)["02_stable_log_softmax"]}
EXPECTED = {"02_stable_log_softmax": 15}
