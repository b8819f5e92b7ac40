"""The MLM head on the selected rows only (notebook 6, `bench head`): same loss, same gradients."""

from __future__ import annotations

import pytest
import torch

from mlmcourse.teaching import bert_walkthrough

pytest.importorskip("transformers")


def batch(seed: int = 0, B: int = 3, L: int = 10, H: int = 16, V: int = 50):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(B, L, H, generator=g, requires_grad=True)
    labels = torch.randint(0, V, (B, L), generator=g)
    labels[torch.rand(B, L, generator=g) >= 0.3] = -100
    return bert_walkthrough.mlm_head(H, V, seed), hidden, labels


def loss_and_gradients(path, head, hidden, labels):
    loss = path(head, hidden, labels, bert_walkthrough.cross_entropy_loss)
    weights = [hidden, head.decoder.weight, head.transform.dense.weight]
    return loss, torch.autograd.grad(loss, weights)


def test_selected_only_gives_the_full_loss_and_gradients():
    head, hidden, labels = batch()
    assert 0 < int((labels != -100).sum()) < labels.numel()
    full, full_grads = loss_and_gradients(bert_walkthrough.full_logits_loss, head, hidden, labels)
    picked, picked_grads = loss_and_gradients(
        bert_walkthrough.selected_only_loss, head, hidden, labels)
    assert abs(full.item() - picked.item()) < 1e-6
    for a, b in zip(full_grads, picked_grads, strict=True):
        assert torch.allclose(a, b, atol=1e-7), (a - b).abs().max()
    # The hidden states of unselected positions get no gradient on either path.
    assert not full_grads[0][labels == -100].any()


def test_selected_only_calls_the_head_on_the_selected_rows_only():
    head, hidden, labels = batch(seed=1)
    seen = []
    head.register_forward_hook(lambda module, args, out: seen.append(tuple(args[0].shape)))
    bert_walkthrough.selected_only_loss(head, hidden, labels, bert_walkthrough.cross_entropy_loss)
    assert seen == [(int((labels != -100).sum()), hidden.shape[-1])]


def test_the_benchmark_agrees_and_prints_its_table():
    from mlmcourse.bench.head import format_table, run_head_benchmark

    result = run_head_benchmark(batch=2, length=16, hidden=16, vocab=64, repeats=1)
    assert result.loss_difference < 1e-5 and result.gradient_difference < 1e-5
    assert set(result.forward_s) == {"all positions", "selected only"}
    table = format_table(result)
    assert "| forward + backward |" in table and "B = 2, L = 16, H = 16, V = 64" in table
