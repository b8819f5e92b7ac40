"""Notebook 3's 2d, checked for the student: the gradient of a temperature softmax loss, written
by hand, against central differences, with the chain rule's usual slips named. The slips live
here, not in the check cell, so that the cell does not show the answer before the student writes
one."""

from __future__ import annotations

from mlmcourse.teaching.backward_mistakes import finite_differences
from mlmcourse.teaching.derivation import compare_site_gradient


def compare_temperature_gradient(temperature_gradient, z, y: int, T: float) -> None:
    """2d's check, never raises: the student's gradient of `logsumexp(z / T) - z[y] / T` at the
    1-D float64 `z` against central differences, naming the slips that drop or misplace the
    factor 1/T that the chain rule through `u = z / T` brings."""
    import torch
    import torch.nn.functional as F

    def loss(v):
        return torch.logsumexp(v / T, dim=0) - v[y] / T

    slopes = finite_differences(loss, z)
    onehot = F.one_hot(torch.tensor(y), len(z))
    at_u = torch.softmax(z / T, dim=0) - onehot  # 2b's answer, taken at u = z / T
    at_z = torch.softmax(z, dim=0) - onehot  # 2b's answer, taken at z
    slips = {
        "yours is T times too large: the chain rule through u = z / T adds the factor "
        "du_i/dz_i = 1/T": at_u,
        "that is 2b's answer, the gradient at T = 1: where does T enter the loss?": at_z,
        "only the one-hot was divided by T: the logsumexp term passes through u = z / T as "
        "well, so its softmax takes the factor 1/T too": torch.softmax(z / T, dim=0) - onehot / T,
        "the softmax is taken at z, not at u = z / T: the chain rule evaluates the outer "
        "derivative at u": at_z / T,
    }
    compare_site_gradient(temperature_gradient, slopes, z, y, name="temperature_gradient",
                          slips=slips)
