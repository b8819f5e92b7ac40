"""The final experiment of the series: a 16x4 context table trained by masked-LM.

The two functions the student wrote are passed in (``make_mlm_inputs`` and ``masked_lm_loss``);
nothing here implements them. The protocol is the one of the course contract:

- 64 sequences ``[left, center, right]``: the 16 ordered pairs ``(left, right)`` in ``{0..3}^2``,
  each 4 times, with ``center = (2*left + right) % 4``; vocabulary ``{0..3}``, ``mask_token_id=4``;
- only centers are eligible; every step selects each center with probability 0.15 and draws fresh
  ``draws`` and ``random_ids`` in ``[0, 4)``, all from one ``torch.Generator`` seeded with the seed;
- the model is a float64 table ``W`` of shape 16x4 (zeros): the logits at a center are
  ``W[4*left' + right']`` read from the corrupted left and right tokens; other positions get
  logits whose labels are ignored;
- 100 Adam updates at ``lr=0.08`` on ``masked_lm_loss(logits, labels)``;
- after every update, NLL and accuracy over all 64 centers with clean context.

The sliders of the notebook change the selection rate and the mask / random / keep shares: the
shares are mapped onto the draws handed to ``make_mlm_inputs`` (its 0.8 / 0.9 thresholds never
change). With the default shares the map is the identity, so the default run is the protocol.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

import torch

VOCAB_SIZE = 4  # prediction vocabulary {0, 1, 2, 3}
MASK_TOKEN_ID = 4  # outside the prediction vocabulary
IGNORE_INDEX = -100
COPIES = 4  # each ordered (left, right) pair appears this many times
CENTER = 1  # the only eligible position of [left, center, right]
N_STEPS = 100
LR = 0.08
SEED = 163
SELECTION_RATE = 0.15
DEFAULT_SHARES = (0.8, 0.1, 0.1)  # mask, random, keep: the shares make_mlm_inputs assumes
# The six mixes of BERT's Appendix C.2 as (mask, random, keep) shares, in the paper's order. The
# paper writes a mix as MASK / SAME / RND: SAME is the keep share and RND the random share.
PAPER_MIXES = (
    (0.8, 0.1, 0.1),
    (1.0, 0.0, 0.0),
    (0.8, 0.2, 0.0),
    (0.8, 0.0, 0.2),
    (0.0, 0.8, 0.2),
    (0.0, 1.0, 0.0),
)
THRESHOLDS = (0.8, 0.9)  # fixed inside make_mlm_inputs

# Acceptance, from the course contract.
MAX_FINAL_NLL = 0.1
MAX_FRACTION_OF_INITIAL = 0.1
MIN_ACCURACY = 0.95
INITIAL_NLL = math.log(VOCAB_SIZE)

MakeInputs = Callable[..., tuple[torch.Tensor, torch.Tensor]]
Loss = Callable[..., torch.Tensor]


def true_center(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """The rule the table has to learn: ``center = (2*left + right) % 4``."""
    return (2 * left + right) % VOCAB_SIZE


def make_tokens(copies: int = COPIES) -> torch.Tensor:
    """The ``[64, 3]`` int64 batch: the 16 pairs in order (left-major), the block repeated."""
    left = torch.arange(VOCAB_SIZE).repeat_interleave(VOCAB_SIZE)
    right = torch.arange(VOCAB_SIZE).repeat(VOCAB_SIZE)
    pairs = torch.stack([left, true_center(left, right), right], dim=1)
    return pairs.repeat(copies, 1)


def eligible_mask(tokens: torch.Tensor) -> torch.Tensor:
    """Only the center of each sequence can be selected."""
    eligible = torch.zeros_like(tokens, dtype=torch.bool)
    eligible[:, CENTER] = True
    return eligible


def normalize_shares(mask: float, random: float, keep: float) -> tuple[float, float, float]:
    """Scale three non-negative shares to sum to one (sliders need not sum to one)."""
    shares = (float(mask), float(random), float(keep))
    if min(shares) < 0 or sum(shares) <= 0:
        raise ValueError("the mask / random / keep shares must be >= 0 and not all zero")
    total = sum(shares)
    return (shares[0] / total, shares[1] / total, shares[2] / total)


def branch_of(draws: torch.Tensor) -> torch.Tensor:
    """0 = [MASK], 1 = random id, 2 = kept: the branch make_mlm_inputs takes for each draw.

    The draws are compared in their own dtype, as a student's code compares them.
    """
    low, high = THRESHOLDS
    return (draws >= low).long() + (draws >= high).long()


@functools.cache
def _below(edge: float, dtype: torch.dtype) -> float:
    """The largest value of ``dtype`` below ``edge`` (cached: shape_draws runs at every step)."""
    edge_tensor = torch.tensor(edge, dtype=dtype)
    return torch.nextafter(edge_tensor, torch.zeros_like(edge_tensor)).item()


def shape_draws(u: torch.Tensor, shares: tuple[float, float, float]) -> torch.Tensor:
    """Map uniform ``u`` in [0, 1) onto draws with the wanted branch shares.

    ``make_mlm_inputs`` always sends draws < 0.8 to [MASK], [0.8, 0.9) to a random id and
    >= 0.9 to the original token. A share triple ``(m, r, k)`` is obtained by stretching
    ``[0, m)`` onto ``[0, 0.8)``, ``[m, m+r)`` onto ``[0.8, 0.9)`` and ``[m+r, 1)`` onto
    ``[0.9, 1)``. The default shares return ``u`` itself (bit for bit).
    """
    normalized = normalize_shares(*shares)
    if all(abs(a - b) < 1e-12 for a, b in zip(normalized, DEFAULT_SHARES, strict=True)):
        return u
    mask, random, _ = normalized
    u_edges = (0.0, mask, mask + random, 1.0)
    d_edges = (0.0, THRESHOLDS[0], THRESHOLDS[1], 1.0)
    out = torch.empty_like(u)
    for i in range(3):
        lo, hi = u_edges[i], u_edges[i + 1]
        inside = (u >= lo) & (u < hi) if i < 2 else u >= lo
        scale = (d_edges[i + 1] - d_edges[i]) / max(hi - lo, 1e-300)
        mapped = d_edges[i] + (u - lo) * scale
        # Rounding must never push a draw across a threshold or onto 1.0.
        mapped = mapped.clamp(d_edges[i], _below(d_edges[i + 1], u.dtype))
        out = torch.where(inside, mapped, out)
    return out


@dataclass(frozen=True)
class Settings:
    """What the sliders change; the defaults are the protocol of the course contract."""

    seed: int = SEED
    lr: float = LR
    selection_rate: float = SELECTION_RATE
    shares: tuple[float, float, float] = DEFAULT_SHARES
    n_steps: int = N_STEPS


@dataclass
class History:
    """Everything one run produced, per step (``eval_*`` has one more entry: step 0)."""

    settings: Settings
    train_loss: torch.Tensor  # [n_steps] masked-LM loss on the step's batch, before the update
    n_selected: torch.Tensor  # [n_steps] how many centers were selected (labels that count)
    eval_nll: torch.Tensor  # [n_steps + 1] clean-context NLL over the 64 centers
    eval_accuracy: torch.Tensor  # [n_steps + 1]
    tables: torch.Tensor  # [n_steps + 1, 16, 4] the table W after each update
    selected: torch.Tensor  # [n_steps, 64] bool: which centers were selected
    draws: torch.Tensor  # [n_steps, 64] float64: the (shaped) draw at each center
    random_ids: torch.Tensor  # [n_steps, 64] int64
    corrupted: torch.Tensor  # [n_steps, 64] int64: the center after make_mlm_inputs
    tokens: torch.Tensor = field(repr=False, default_factory=make_tokens)

    @property
    def final_nll(self) -> float:
        return float(self.eval_nll[-1])

    @property
    def final_accuracy(self) -> float:
        return float(self.eval_accuracy[-1])

    @property
    def initial_nll(self) -> float:
        return float(self.eval_nll[0])


def table_logits(table: torch.Tensor, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """Row ``4*left + right`` of the table: the logits the model gives at a center."""
    return table[VOCAB_SIZE * left + right]


def evaluate(tables: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """NLL and accuracy of each table in ``tables [T, 16, 4]`` over all centers, clean context."""
    with torch.no_grad():
        logits = tables[:, VOCAB_SIZE * tokens[:, 0] + tokens[:, 2]]  # [T, 64, 4]
        target = tokens[:, CENTER].expand(tables.shape[0], -1)
        logp = torch.log_softmax(logits, dim=-1)
        nll = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1).mean(dim=1)
        accuracy = (logits.argmax(dim=-1) == target).double().mean(dim=1)
    return nll, accuracy


class ContextTable:
    """The model of the experiment: a 16x4 float64 table read at row ``4*left' + right'``."""

    def __init__(self) -> None:
        self.table = torch.zeros(VOCAB_SIZE**2, VOCAB_SIZE, dtype=torch.float64, requires_grad=True)

    def parameters(self) -> list[torch.Tensor]:
        return [self.table]

    def center_logits(self, corrupted: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, V]`` at the centers, from the corrupted left and right tokens."""
        return table_logits(self.table, corrupted[:, 0], corrupted[:, 2])


class Model(Protocol):
    def parameters(self) -> list[torch.Tensor]: ...

    def center_logits(self, corrupted: torch.Tensor) -> torch.Tensor: ...


@dataclass
class Trace:
    """What the training loop saw and did, step by step (for any model)."""

    train_loss: torch.Tensor  # [n_steps] masked-LM loss of the step's batch, before the update
    selected: torch.Tensor  # [n_steps, 64] bool: which centers were selected
    draws: torch.Tensor  # [n_steps, 64] float64: the (shaped) draw at each center
    random_ids: torch.Tensor  # [n_steps, 64] int64: the random id offered at each center
    corrupted: torch.Tensor  # [n_steps, 64] int64: the center after make_mlm_inputs
    snapshots: list[torch.Tensor]  # per parameter: [n_steps + 1, *shape], step 0 = the start


def _resolve(settings: Settings | None, overrides: dict[str, object]) -> Settings:
    settings = settings or Settings()
    if overrides:
        settings = Settings(**{**settings.__dict__, **overrides})
    if not 0.0 <= settings.selection_rate <= 1.0:
        raise ValueError("selection_rate must lie in [0, 1]")
    normalize_shares(*settings.shares)
    return settings


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run on one thread: the tensors are tiny, and a second thread that waits for a busy
    core made a run an order of magnitude slower on the 2-core course machine."""
    before = torch.get_num_threads()
    if before != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if before != 1:
            torch.set_num_threads(before)


def train(
    make_mlm_inputs: MakeInputs,
    masked_lm_loss: Loss,
    model: Model,
    settings: Settings | None = None,
    tokens: torch.Tensor | None = None,
    **overrides: object,
) -> Trace:
    """The masked-LM training loop of the course with the student's two functions.

    ``tokens`` defaults to the 64 sequences of the experiment; any ``[B, 3]`` batch of
    ``[left, center, right]`` with tokens in ``{0..3}`` works (only centers are eligible).
    """
    settings = _resolve(settings, overrides)
    tokens = make_tokens() if tokens is None else tokens
    with one_thread():
        return _train(make_mlm_inputs, masked_lm_loss, model, settings, tokens)


class Adam:
    """``torch.optim.Adam`` with its default settings, written out for speed.

    The same arithmetic, in the same order, as torch's single-tensor Adam (betas 0.9 / 0.999,
    eps 1e-8, no weight decay), so the updates are identical bit for bit; what is saved is the
    optimizer framework's per-step overhead, a large part of a 100-step run on tiny tensors.
    """

    def __init__(self, params: list[torch.Tensor], lr: float,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        self.params, self.lr, self.betas, self.eps = params, lr, betas, eps
        self.exp_avg = [torch.zeros_like(p) for p in params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in params]
        self.steps = 0

    @torch.no_grad()
    def step(self, grads: list[torch.Tensor]) -> None:
        beta1, beta2 = self.betas
        self.steps += 1
        step = float(self.steps)
        bias_correction1 = 1 - beta1**step
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        step_size = self.lr / bias_correction1
        for param, grad, exp_avg, exp_avg_sq in zip(
            self.params, grads, self.exp_avg, self.exp_avg_sq, strict=True
        ):
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(self.eps)
            param.addcdiv_(exp_avg, denom, value=-step_size)


def _train(make_mlm_inputs: MakeInputs, masked_lm_loss: Loss, model: Model, settings: Settings,
           tokens: torch.Tensor) -> Trace:
    eligible = eligible_mask(tokens)
    batch, length = tokens.shape
    generator = torch.Generator().manual_seed(int(settings.seed))
    params = model.parameters()
    optimizer = Adam(params, lr=settings.lr)
    off_center = torch.zeros(batch, VOCAB_SIZE, dtype=torch.float64)  # their labels are ignored

    snapshots = [[p.detach().clone()] for p in params]
    losses: list[torch.Tensor] = []
    log: dict[str, list[torch.Tensor]] = {k: [] for k in ("selected", "draws", "random_ids",
                                                          "corrupted")}
    for _ in range(settings.n_steps):
        # The caller owns the randomness: selection, draws and random ids, fresh every step.
        pick = torch.rand(batch, length, generator=generator, dtype=torch.float64)
        selected = eligible & (pick < settings.selection_rate)
        u = torch.rand(batch, length, generator=generator, dtype=torch.float64)
        draws = shape_draws(u, settings.shares)
        random_ids = torch.randint(0, VOCAB_SIZE, (batch, length), generator=generator)
        corrupted, labels = make_mlm_inputs(
            tokens, selected, draws, random_ids, MASK_TOKEN_ID, IGNORE_INDEX
        )
        center = model.center_logits(corrupted)
        logits = torch.stack([off_center, center, off_center], dim=1)  # [B, L, V]
        loss = masked_lm_loss(logits, labels, IGNORE_INDEX)
        if not (isinstance(loss, torch.Tensor) and loss.requires_grad):
            raise RuntimeError(
                f"masked_lm_loss returned a loss that is not connected to the logits (at an update "
                f"with {int(selected.sum())} selected centers): it must be computed from the "
                "logits, also when no site is selected (notebook 3)"
            )
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        optimizer.step([torch.zeros_like(p) if g is None else g
                        for p, g in zip(params, grads, strict=True)])

        losses.append(loss.detach())
        for snap, p in zip(snapshots, params, strict=True):
            snap.append(p.detach().clone())
        for key, value in (("selected", selected), ("draws", draws),
                           ("random_ids", random_ids), ("corrupted", corrupted)):
            log[key].append(value)

    def centers(key: str, dtype: torch.dtype) -> torch.Tensor:
        if not log[key]:
            return torch.empty(0, batch, dtype=dtype)
        return torch.stack(log[key])[:, :, CENTER]

    return Trace(
        train_loss=torch.stack(losses).to(torch.float64) if losses else torch.empty(0),
        selected=centers("selected", torch.bool),
        draws=centers("draws", torch.float64),
        random_ids=centers("random_ids", torch.int64),
        corrupted=centers("corrupted", torch.int64),
        snapshots=[torch.stack(snap) for snap in snapshots],
    )


def run_experiment(
    make_mlm_inputs: MakeInputs,
    masked_lm_loss: Loss,
    settings: Settings | None = None,
    **overrides: object,
) -> History:
    """Train the context table for ``n_steps`` Adam updates; return the history.

    ``run_experiment(f, g, seed=3, lr=0.1)`` is short for passing ``Settings(seed=3, lr=0.1)``.
    """
    settings = _resolve(settings, overrides)
    with one_thread():
        trace = train(make_mlm_inputs, masked_lm_loss, ContextTable(), settings)
        tokens = make_tokens()
        tables = trace.snapshots[0]
        eval_nll, eval_accuracy = evaluate(tables, tokens)
    return History(
        settings=settings,
        train_loss=trace.train_loss,
        n_selected=trace.selected.sum(dim=1),
        eval_nll=eval_nll,
        eval_accuracy=eval_accuracy,
        tables=tables,
        selected=trace.selected,
        draws=trace.draws,
        random_ids=trace.random_ids,
        corrupted=trace.corrupted,
        tokens=tokens,
    )


@dataclass(frozen=True)
class Acceptance:
    """The three acceptance checks of one run."""

    final_nll: float
    initial_nll: float
    final_accuracy: float

    @property
    def nll_below_limit(self) -> bool:
        return self.final_nll < MAX_FINAL_NLL

    @property
    def nll_below_fraction(self) -> bool:
        return self.final_nll < MAX_FRACTION_OF_INITIAL * self.initial_nll

    @property
    def accuracy_ok(self) -> bool:
        return self.final_accuracy >= MIN_ACCURACY

    @property
    def passed(self) -> bool:
        return self.nll_below_limit and self.nll_below_fraction and self.accuracy_ok

    def lines(self) -> list[tuple[bool, str]]:
        """One (ok, sentence) per check, for badges and messages."""
        fraction = self.final_nll / self.initial_nll if self.initial_nll else float("nan")
        return [
            (self.nll_below_limit, f"final NLL {self.final_nll:.4f} < {MAX_FINAL_NLL}"),
            (self.nll_below_fraction,
             f"final NLL is {100 * fraction:.1f}% of the initial {self.initial_nll:.3f} "
             f"(< {100 * MAX_FRACTION_OF_INITIAL:.0f}%)"),
            (self.accuracy_ok,
             f"accuracy {100 * self.final_accuracy:.1f}% >= {100 * MIN_ACCURACY:.0f}%"),
        ]

    def __str__(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        return verdict + ": " + "; ".join(s + (" ✓" if ok else " ✗") for ok, s in self.lines())


def acceptance(history: History) -> Acceptance:
    """Judge a run by the course's acceptance rule."""
    return Acceptance(history.final_nll, history.initial_nll, history.final_accuracy)


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bit pattern, so that "the same" includes NaNs and signed zeros."""
    views = {torch.float64: torch.int64, torch.float32: torch.int32}
    return t.contiguous().view(views[t.dtype]) if t.dtype in views else t


# What two runs are compared on, in the words a message names them by.
RUN_PARTS = {"train_loss": "training losses", "eval_nll": "evaluation NLLs",
             "eval_accuracy": "accuracies", "tables": "tables", "selected": "selections",
             "corrupted": "corrupted tokens"}


def run_differences(a: History, b: History) -> list[str]:
    """The parts of two runs that are not identical bit for bit, in words (empty: the same run)."""
    def same(x: torch.Tensor, y: torch.Tensor) -> bool:
        return x.shape == y.shape and x.dtype == y.dtype and torch.equal(_bits(x), _bits(y))

    return [words for field, words in RUN_PARTS.items()
            if not same(getattr(a, field), getattr(b, field))]


def same_run(a: History, b: History) -> bool:
    """True when two runs produced identical curves, tables, selections and corrupted tokens,
    bit for bit."""
    return not run_differences(a, b)
