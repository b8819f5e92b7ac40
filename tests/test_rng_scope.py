"""Nothing the student's process chose reaches the trusted kernel's random numbers.

A hidden test that draws from the global generator after calling the student's function, without
seeding first, must draw the trusted kernel's own numbers: a function that seeds (or sets) the
global generator in its process chooses nothing there. The trusted kernel still sees that the
global state moved (a test may check that a function draws from its generator argument only).
"""

from __future__ import annotations

import torch
from test_engine import student_worker

from mlmcourse.grader.trusted_kernel.proxies import StudentFunction

CELLS = [{"grade_id": "c", "filename": "<c>", "source": (
    "import torch\n"
    "def seeds(x):\n"
    "    torch.manual_seed(1234)\n"
    "    return x\n"
    "def sets(x, state):\n"
    "    torch.set_rng_state(state)\n"
    "    return x\n"
    "def draws(x):\n"
    "    torch.rand(5)\n"
    "    return x\n"
    "def rand(n):\n"
    "    return torch.rand(n)\n"
    "def pure(x):\n"
    "    return x + 1\n")}]


def chosen_by_the_student(seed: int) -> torch.Tensor:
    return torch.rand(4, generator=torch.Generator().manual_seed(seed))


def test_a_hidden_test_never_draws_numbers_the_student_chose():
    harness, client = student_worker(CELLS)
    try:
        torch.manual_seed(7)
        StudentFunction(client, "seeds")(torch.zeros(1))
        drawn = torch.rand(4)
        assert not torch.equal(drawn, chosen_by_the_student(1234)), \
            "the trusted kernel drew from the seed the student's function set"
        planted = torch.Generator().manual_seed(99).get_state()
        StudentFunction(client, "sets")(torch.zeros(1), planted)
        assert not torch.equal(torch.rand(4), chosen_by_the_student(99)), \
            "the trusted kernel drew from the state the student's function set"
    finally:
        harness.close()


def test_the_trusted_kernel_sees_that_the_global_state_moved_and_only_then():
    harness, client = student_worker(CELLS)
    try:
        torch.manual_seed(3)
        before = torch.get_rng_state()
        StudentFunction(client, "pure")(torch.zeros(1))
        assert torch.equal(torch.get_rng_state(), before), "a call that draws nothing moved it"
        StudentFunction(client, "draws")(torch.zeros(1))
        assert not torch.equal(torch.get_rng_state(), before), "a draw went unseen"
        torch.manual_seed(0)  # what the test seeds reaches the student's process
        assert torch.equal(StudentFunction(client, "rand")(3), chosen_by_the_student(0)[:3])
    finally:
        harness.close()
