"""The hidden tests' mutation score (`mlmcourse.bench.mutation`): the mutants are real, distinct
and compile; a deterministic sample of them is caught by the hidden tests through the engine."""

from __future__ import annotations

import ast

import pytest

from mlmcourse.bench.mutants import (
    EQUIVALENT,
    answer_cells,
    generate_mutants,
    mutants_of_cell,
    select,
)
from mlmcourse.bench.mutation import grade_mutants

GRADED_FUNCTIONS = {
    "make_mlm_inputs", "target_log_probs", "masked_mean_nll", "MaskedLMLoss.forward",
    "MaskedLMLoss.backward", "masked_lm_loss", "select_for_masking",
}


@pytest.fixture(scope="module")
def mutants():
    return generate_mutants()


def test_every_graded_function_has_mutants(mutants):
    counts = {name: sum(m.function == name for m in mutants) for name in GRADED_FUNCTIONS}
    assert all(count >= 5 for count in counts.values()), counts
    assert {m.function for m in mutants} == GRADED_FUNCTIONS


def test_every_mutant_compiles_and_differs_from_the_reference(mutants):
    references = {cell_id: ast.dump(ast.parse(source)) for _, cell_id, source in answer_cells()}
    for mutant in mutants:
        tree = ast.parse(mutant.source)  # a SyntaxError here fails the test
        compile(tree, mutant.mutant_id, "exec")
        assert ast.dump(tree) != references[mutant.grade_id], mutant.mutant_id


def test_mutant_ids_are_unique_and_stable(mutants):
    ids = [m.mutant_id for m in mutants]
    assert len(ids) == len(set(ids))
    assert ids == [m.mutant_id for m in generate_mutants()]


def test_every_listed_equivalent_mutant_still_exists(mutants):
    """A notebook edit that moves or removes a site must update EQUIVALENT too."""
    stale = set(EQUIVALENT) - {m.mutant_id for m in mutants}
    assert not stale, f"EQUIVALENT names mutants that are no longer generated: {sorted(stale)}"


def test_only_the_solution_region_is_mutated():
    source = ("def f(x):\n    \"\"\"Doc 1.\"\"\"\n    y = x + 1\n    ### BEGIN SOLUTION\n"
              "    if x < 0:\n        raise ValueError(f'bad {x + 1}')\n    return x * 2\n"
              "    ### END SOLUTION\n")
    found = {m.operator for m in mutants_of_cell("nb", "f", source)}
    assert found == {"Lt->LtE", "Lt->GtE", "const:0->1", "const:0->-1", "drop-validation",
                     "return-None", "return.double()", "return.to(float32)", "Mult->Div",
                     "Mult:keep-left", "const:2->3", "const:2->1"}


def test_sampling_takes_every_nth_mutant_of_each_function(mutants):
    sample = select(mutants, every=10, functions=["make_mlm_inputs", "masked_lm_loss"])
    for name in ("make_mlm_inputs", "masked_lm_loss"):
        of_function = [m for m in mutants if m.function == name]
        assert [m for m in sample if m.function == name] == of_function[::10]


@pytest.mark.slow
def test_sampled_mutants_are_killed_by_the_hidden_tests(mutants, tmp_path):
    """Every 10th mutant of make_mlm_inputs and masked_lm_loss, graded through the engine
    (about two minutes on two cores): each one not judged equivalent must lose points."""
    sample = select(mutants, every=10, functions=["make_mlm_inputs", "masked_lm_loss"])
    outcomes = grade_mutants(sample, workdir=tmp_path)
    survivors = [o.mutant.mutant_id for o in outcomes
                 if not o.killed and o.mutant.equivalent_reason is None]
    assert not survivors, f"mutants the hidden tests do not catch: {survivors}"
