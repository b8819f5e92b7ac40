"""Time BERT's MLM head + loss on every position against the head on the selected rows only.

Notebook 6 (Step 6) shows that gathering the hidden states of the selected sites before the head
(`bert_walkthrough.selected_only_loss`, as Google's original BERT does) gives the same loss and
gradients as computing the logits everywhere (`bert_walkthrough.full_logits_loss`, as the
walkthrough and `BertForMaskedLM` do). This measures what it saves at BERT-base shape: the head
is a freshly initialised `BertLMPredictionHead` (dense + GELU + LayerNorm, then the H x V
decoder), the loss `F.cross_entropy` as `BertForMaskedLM` applies it, and forward + backward
produces the gradients of the hidden states and of every weight of the head. Needs the optional
`transformers` extra.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from mlmcourse.bench.loss import MIB, interleaved_medians, peak_extra_bytes
from mlmcourse.teaching import bert_walkthrough

PATHS = {
    "all positions": bert_walkthrough.full_logits_loss,
    "selected only": bert_walkthrough.selected_only_loss,
}


@dataclass
class HeadResult:
    shape: tuple[int, int, int, int]  # B, L, H, V
    selected_share: float
    repeats: int
    device: str
    threads: int
    forward_s: dict[str, float]
    forward_backward_s: dict[str, float]
    peak_bytes: dict[str, int]  # forward + backward
    memory_method: str
    loss_difference: float
    gradient_difference: float  # the largest, over the hidden states and the head's weights

    def speedup(self, seconds: dict[str, float]) -> float:
        return seconds["all positions"] / seconds["selected only"]


def make_inputs(batch: int, length: int, hidden: int, vocab: int, rate: float, seed: int,
                device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """A float32 last hidden state [B, L, H] and labels with about `rate` of the sites selected."""
    g = torch.Generator().manual_seed(seed)
    states = torch.randn(batch, length, hidden, generator=g)
    labels = torch.randint(0, vocab, (batch, length), generator=g)
    labels[torch.rand(batch, length, generator=g) >= rate] = -100
    return states.to(device).requires_grad_(True), labels.to(device)


def _gradients(head, states, labels, path) -> tuple[float, list[torch.Tensor]]:
    loss = path(head, states, labels, bert_walkthrough.cross_entropy_loss)
    wrt = [states, *head.parameters()]
    return loss.item(), list(torch.autograd.grad(loss, wrt, allow_unused=True))


def agreement(head, states, labels) -> tuple[float, float]:
    """|loss difference| and the largest gradient difference of the two paths (the timings
    mean nothing unless both compute the same thing)."""
    (loss_a, grads_a), (loss_b, grads_b) = (_gradients(head, states, labels, p)
                                            for p in PATHS.values())
    gaps = [(a - b).abs().max().item() for a, b in zip(grads_a, grads_b, strict=True)
            if a is not None and b is not None]
    return abs(loss_a - loss_b), max(gaps)


def _steps(head, states, labels) -> dict[str, Callable[[], object]]:
    """For each path, a training forward (graph built, then dropped) and a forward + backward."""
    steps = {}
    for name, path in PATHS.items():
        def forward(path=path) -> None:
            path(head, states, labels, bert_walkthrough.cross_entropy_loss)

        def forward_backward(path=path) -> None:
            head.zero_grad(set_to_none=True)
            states.grad = None
            path(head, states, labels, bert_walkthrough.cross_entropy_loss).backward()
            head.zero_grad(set_to_none=True)
            states.grad = None

        steps[f"forward/{name}"] = forward
        steps[f"both/{name}"] = forward_backward
    return steps


def run_head_benchmark(*, batch: int = 32, length: int = 128, hidden: int = 768,
                       vocab: int = 30522, rate: float = 0.15, repeats: int = 5, seed: int = 0,
                       device: str = "cpu") -> HeadResult:
    dev = torch.device(device)
    head = bert_walkthrough.mlm_head(hidden, vocab, seed).to(dev)
    states, labels = make_inputs(batch, length, hidden, vocab, rate, seed, dev)
    loss_difference, gradient_difference = agreement(head, states, labels)
    steps = _steps(head, states, labels)
    medians = interleaved_medians(steps, dev, repeats)
    peaks = {}
    for name in PATHS:
        peaks[name], method = peak_extra_bytes(steps[f"both/{name}"], dev)
    return HeadResult(
        shape=(batch, length, hidden, vocab),
        selected_share=(labels != -100).float().mean().item(),
        repeats=repeats, device=str(dev), threads=torch.get_num_threads(),
        forward_s={name: medians[f"forward/{name}"] for name in PATHS},
        forward_backward_s={name: medians[f"both/{name}"] for name in PATHS},
        peak_bytes=peaks, memory_method=method,
        loss_difference=loss_difference, gradient_difference=gradient_difference,
    )


def format_table(result: HeadResult) -> str:
    """The result as a markdown table with a short note on how it was measured."""
    B, L, H, V = result.shape
    full, picked = "all positions", "selected only"
    rows = [
        (what, f"{s[full] * 1e3:.1f} ms", f"{s[picked] * 1e3:.1f} ms",
         f"**{result.speedup(s):.2f}x**")
        for what, s in (("forward", result.forward_s),
                        ("forward + backward", result.forward_backward_s))
    ]
    peaks = result.peak_bytes
    rows.append(("peak extra memory, forward + backward", f"{peaks[full] / MIB:.0f} MiB",
                 f"{peaks[picked] / MIB:.0f} MiB", ""))
    return "\n".join([
        "| head + loss | all positions (`full_logits_loss`) | selected only "
        "(`selected_only_loss`) | speed-up |",
        "|---|---:|---:|---:|",
        *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows),
        "",
        f"B = {B}, L = {L}, H = {H}, V = {V}, float32, {result.selected_share:.1%} of the sites "
        f"selected; `BertLMPredictionHead` + `F.cross_entropy`; {result.device}, "
        f"{result.threads} threads, torch {torch.__version__}; medians of {result.repeats} "
        f"interleaved rounds after a warm-up round. Peak memory: {result.memory_method}. The two "
        f"losses differ by {result.loss_difference:.1e}, their gradients by at most "
        f"{result.gradient_difference:.1e}.",
    ])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mlmcourse bench head",
        description="Time the MLM head + loss on every position against the selected rows only.",
    )
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--vocab", type=int, default=30522)
    parser.add_argument("--rate", type=float, default=0.15, help="share of selected sites")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    if not bert_walkthrough.transformers_available():
        print("bench head needs the optional extra: " + bert_walkthrough.INSTALL_COMMAND)
        return 2
    print(format_table(run_head_benchmark(
        batch=args.batch, length=args.length, hidden=args.hidden, vocab=args.vocab,
        rate=args.rate, repeats=args.repeats, seed=args.seed, device=args.device)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
