"""A backward that finds the selected sites again from the labels, with a literal -100 (learner
round 13): right for the default ignore_index, and it scored 31 / 31 until B5 took the gradient
with ignore_index=-1 too. With -1 it selects every site and its index_copy_ fails."""

BASE = "reference"
PATCHES = {
    "03_empty_mask_and_gradient": {
        "masked_lm_loss_function": [
            ("        ctx.save_for_backward(exps, sums, sites, targets)\n",
             "        ctx.save_for_backward(exps, sums, labels, targets)\n"),
            ("        exps, sums, sites, targets = ctx.saved_tensors\n",
             "        exps, sums, labels, targets = ctx.saved_tensors\n"
             "        sites = (labels.reshape(-1) != -100).nonzero().squeeze(1)\n"),
        ],
    },
}
EXPECTED = {"03_empty_mask_and_gradient": 30}
# The phrase the first failing message of each notebook shows: it names the mistake.
SHOWS = {
    "03_empty_mask_and_gradient": "the backward with ignore_index=-1",
}
