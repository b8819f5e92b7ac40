"""Time the reference `masked_lm_loss` of notebook 3 against `F.cross_entropy` at BERT-base shape.

No solution code lives in this package: the reference is read from the instructor notebook at run
time (its `setup` cell and its solution cells, with the solution marker lines dropped).

Peak memory on the CPU is the growth of the process's resident set while one call runs: the
high-water mark (`VmHWM`) is reset through `/proc/self/clear_refs` before the call and read from
`/proc/self/status` after it. Where that reset is not allowed, `resource.getrusage` gives only the
growth beyond the earlier peak of the process (a lower bound), and the table says so. On CUDA it is
`torch.cuda.max_memory_allocated` above what was allocated before the call.
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from mlmcourse.teaching.loader import load_functions

NOTEBOOK = (
    Path(__file__).resolve().parents[2]
    / "source"
    / "bert_mlm"
    / "03_empty_mask_and_gradient.ipynb"
)
MIB = 2**20

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def load_reference(notebook: Path = NOTEBOOK) -> dict[str, Any]:
    """The reference `masked_lm_loss` of notebook 3, run from the source by the course's loader."""
    return load_functions(notebook, ["masked_lm_loss"])


def library_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The loss as PyTorch computes it: a log-softmax over every row, ignored rows dropped."""
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100
    )


# ---- measuring ----------------------------------------------------------------------------------


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def interleaved_medians(
    steps: dict[str, Callable[[], object]], device: torch.device, repeats: int
) -> dict[str, float]:
    """Median wall time of each step over `repeats` rounds, after one warm-up round.

    Each round runs every step once, in turn, so that a change in the machine's load during the
    benchmark hits all of them alike and their ratios stay meaningful.
    """
    for step in steps.values():
        step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            _sync(device)
            start = time.perf_counter()
            step()
            _sync(device)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def _proc_status_bytes(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024  # the kernel reports kB
    raise OSError(f"{field} not in /proc/self/status")


def _reset_rss_peak() -> bool:
    """Set the resident-set high-water mark to the current resident set (Linux 4.0+)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        _proc_status_bytes("VmHWM")
    except OSError:
        return False
    return True


def peak_extra_bytes(step: Callable[[], object], device: torch.device) -> tuple[int, str]:
    """Memory that one run of `step()` needs above what is already allocated, and the method."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        step()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before, "torch.cuda.max_memory_allocated"
    if _reset_rss_peak():
        before = _proc_status_bytes("VmRSS")
        step()
        return _proc_status_bytes("VmHWM") - before, "resident-set peak (VmHWM reset)"
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    step()
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return after - before, "ru_maxrss growth (a lower bound)"


# ---- the benchmark ------------------------------------------------------------------------------


@dataclass
class LossTimings:
    """Median seconds and peak extra bytes of one loss function."""

    forward_s: float
    forward_backward_s: float
    forward_peak_bytes: int
    forward_backward_peak_bytes: int


@dataclass
class BenchResult:
    shape: tuple[int, int, int]
    selected_share: float
    repeats: int
    device: str
    threads: int
    library: LossTimings
    reference: LossTimings
    dense_gradient_alloc_s: float
    memory_method: str
    loss_difference: float
    gradient_difference: float

    @property
    def forward_speedup(self) -> float:
        return self.library.forward_s / self.reference.forward_s

    @property
    def forward_backward_speedup(self) -> float:
        return self.library.forward_backward_s / self.reference.forward_backward_s


def make_batch(
    batch: int, length: int, vocab: int, rate: float, seed: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """float32 logits [B, L, V] and int64 labels with about `rate` of the sites selected."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, length, vocab, generator=g)
    labels = torch.randint(0, vocab, (batch, length), generator=g)
    labels[torch.rand(batch, length, generator=g) >= rate] = -100
    return logits.to(device).requires_grad_(True), labels.to(device)


def _steps(loss_fn: LossFn, logits: torch.Tensor, labels: torch.Tensor) -> tuple[Callable, ...]:
    """A training forward (the graph is built, then dropped) and a forward + backward."""

    def forward() -> None:
        loss_fn(logits, labels)

    def forward_backward() -> None:
        logits.grad = None
        loss_fn(logits, labels).backward()
        logits.grad = None

    return forward, forward_backward


def run_loss_benchmark(
    masked_lm_loss: LossFn | None = None,
    *,
    batch: int = 32,
    length: int = 128,
    vocab: int = 30522,
    rate: float = 0.15,
    repeats: int = 7,
    seed: int = 0,
    device: str = "cpu",
) -> BenchResult:
    """Compare `masked_lm_loss` (default: notebook 3's reference) with `F.cross_entropy`."""
    if masked_lm_loss is None:
        masked_lm_loss = load_reference()["masked_lm_loss"]
    dev = torch.device(device)
    logits, labels = make_batch(batch, length, vocab, rate, seed, dev)

    # Both must compute the same loss and gradient before their times mean anything.
    grads = []
    values = []
    for loss_fn in (library_loss, masked_lm_loss):
        logits.grad = None
        loss = loss_fn(logits, labels)
        loss.backward()
        values.append(loss.item())
        grads.append(logits.grad)
    logits.grad = None
    loss_difference = abs(values[0] - values[1])
    gradient_difference = (grads[0] - grads[1]).abs().max().item()
    del grads

    lib_forward, lib_both = _steps(library_loss, logits, labels)
    ref_forward, ref_both = _steps(masked_lm_loss, logits, labels)
    medians = interleaved_medians(
        {
            "lib_forward": lib_forward,
            "ref_forward": ref_forward,
            "lib_both": lib_both,
            "ref_both": ref_both,
            "alloc": lambda: torch.zeros_like(logits),
        },
        dev,
        repeats,
    )
    peaks = {}
    for name, step in [
        ("lib_forward", lib_forward),
        ("ref_forward", ref_forward),
        ("lib_both", lib_both),
        ("ref_both", ref_both),
    ]:
        peaks[name], memory_method = peak_extra_bytes(step, dev)
    library = LossTimings(
        medians["lib_forward"], medians["lib_both"], peaks["lib_forward"], peaks["lib_both"]
    )
    reference = LossTimings(
        medians["ref_forward"], medians["ref_both"], peaks["ref_forward"], peaks["ref_both"]
    )
    return BenchResult(
        shape=(batch, length, vocab),
        selected_share=(labels != -100).float().mean().item(),
        repeats=repeats,
        device=str(dev),
        threads=torch.get_num_threads(),
        library=library,
        reference=reference,
        dense_gradient_alloc_s=medians["alloc"],
        memory_method=memory_method,
        loss_difference=loss_difference,
        gradient_difference=gradient_difference,
    )


# ---- the report ---------------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def _mib(nbytes: int) -> str:
    return f"{nbytes / MIB:.0f} MiB"


def format_table(result: BenchResult) -> str:
    """The result as a markdown table with a short note on how it was measured."""
    B, L, V = result.shape
    lib, ref = result.library, result.reference
    rows = [
        ("forward", _ms(lib.forward_s), _ms(ref.forward_s), f"{result.forward_speedup:.2f}x"),
        (
            "forward + backward",
            _ms(lib.forward_backward_s),
            _ms(ref.forward_backward_s),
            f"{result.forward_backward_speedup:.2f}x",
        ),
        (
            "peak extra memory, forward",
            _mib(lib.forward_peak_bytes),
            _mib(ref.forward_peak_bytes),
            "",
        ),
        (
            "peak extra memory, forward + backward",
            _mib(lib.forward_backward_peak_bytes),
            _mib(ref.forward_backward_peak_bytes),
            "",
        ),
        (
            "bound: allocate the dense gradient (`torch.zeros` [B, L, V])",
            "",
            _ms(result.dense_gradient_alloc_s),
            "",
        ),
    ]
    lines = [
        "| measurement | `F.cross_entropy(ignore_index=-100)` | `masked_lm_loss` (notebook 3) "
        "| speed-up |",
        "|---|---:|---:|---:|",
        *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows),
        "",
        f"B = {B}, L = {L}, V = {V}, float32, {result.selected_share:.1%} of the sites selected; "
        f"{result.device}, {result.threads} threads, torch {torch.__version__}; times are medians "
        f"of {result.repeats} interleaved rounds after a warm-up round. Peak memory: "
        f"{result.memory_method}, above the logits ({_mib(B * L * V * 4)}) already allocated. "
        "The two losses differ by "
        f"{result.loss_difference:.1e}, their gradients by at most "
        f"{result.gradient_difference:.1e}.",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mlmcourse bench",
        description="Time notebook 3's masked_lm_loss against F.cross_entropy (markdown table).",
    )
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--vocab", type=int, default=30522)
    parser.add_argument("--rate", type=float, default=0.15, help="share of selected sites")
    parser.add_argument("--repeats", type=int, default=7, help="timed rounds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--notebook", type=Path, default=NOTEBOOK, help="where the reference lives")
    args = parser.parse_args(argv)
    loss_fn = load_reference(args.notebook)["masked_lm_loss"]
    result = run_loss_benchmark(
        loss_fn,
        batch=args.batch,
        length=args.length,
        vocab=args.vocab,
        rate=args.rate,
        repeats=args.repeats,
        seed=args.seed,
        device=args.device,
    )
    print(format_table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
