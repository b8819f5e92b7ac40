"""A WordPiece tokenizer and a ``BertForMaskedLM`` for notebook 6, offline only.

``bert-base-uncased`` is used when it is already in the local Hugging Face cache. Nothing is ever
downloaded: when the cache does not hold it (the usual case on a course machine), a small
stand-in is built here, deterministically, in about 10 to 30 seconds of one CPU thread:

- a WordPiece vocabulary learned from ``data/wordpiece_corpus.txt`` (a few KB of plain text that
  ships with the course) with the ``tokenizers`` library, wrapped as a ``BertTokenizerFast`` with
  ``[PAD] [UNK] [CLS] [SEP] [MASK]``;
- a ``BertForMaskedLM`` with a tiny ``BertConfig`` (2 layers, hidden size 64, 2 heads), trained
  for a few hundred Adam steps on the masked-LM loss over that same text's sentences (Hugging
  Face's collator corrupts them, 15% and 80/10/10). It learns the text by heart: it fills in a
  masked word of a sentence it has read, which is what notebook 6 needs to show a loss and
  predictions that mean something, and it knows little English beyond that text.

``transformers`` and ``tokenizers`` are an optional extra (``requirements/bert.txt``): this module
imports them only inside its functions, so ``transformers_available()`` works without them.
Setting ``MLMCOURSE_BERT_STANDIN=1`` skips the cache and always builds the stand-in, so that a
build of the reading edition gives the same outputs on every machine.
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

PRETRAINED_NAME = "bert-base-uncased"
INSTALL_COMMAND = "pip install -c requirements/constraints.txt -r requirements/bert.txt"
CORPUS = Path(__file__).resolve().parent / "data" / "wordpiece_corpus.txt"
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
CONTINUATION = "##"
STANDIN_VARIABLE = "MLMCOURSE_BERT_STANDIN"

# The small stand-in model: fast on two CPU cores, big enough to be a real BERT.
SMALL_BERT = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 128,
    "max_position_embeddings": 128,
}
SMALL_VOCAB_MERGES = 1000  # upper bound for the BPE trainer; the small corpus stops it earlier
# Its training: enough steps to learn the corpus by heart (34 sentences, 782 tokens with their
# [CLS] and [SEP]; the MLM loss falls from ln V, about 7.4, to about 0.3); no dropout, so only
# the collator's draws are random.
STANDIN_TRAINING = {"steps": 300, "lr": 5e-3, "mlm_probability": 0.15}


@dataclass(frozen=True)
class LoadedBert:
    """The tokenizer and the model notebook 6 works with, and where they came from."""

    tokenizer: Any  # transformers.BertTokenizerFast
    model: Any  # transformers.BertForMaskedLM, in eval mode
    pretrained: bool  # True: bert-base-uncased from the local cache; False: the small stand-in
    description: str  # what the notebook prints: which model, and what it can and cannot show


def transformers_available() -> bool:
    """True when the optional extra (``transformers`` and ``tokenizers``) imports."""
    _offline_environment()  # before the first import: huggingface_hub reads it once
    try:
        import tokenizers  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        return False
    return True


def _offline_environment() -> None:
    """Never reach for the network; no progress bars, no fork warning from a Jupyter kernel."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _offline_and_quiet() -> None:
    """The offline environment, and transformers' advice and warnings off the notebook's stderr."""
    _offline_environment()
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()


def load_bert(name: str = PRETRAINED_NAME, seed: int = 0) -> LoadedBert:
    """``name`` from the local Hugging Face cache if it is there, else the small stand-in."""
    _offline_and_quiet()
    if os.environ.get(STANDIN_VARIABLE, "") not in ("", "0"):
        return small_bert(seed, why=(
            f"The stand-in was asked for ({STANDIN_VARIABLE}=1, as for the reading edition)"))
    from transformers import BertForMaskedLM, BertTokenizerFast

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tokenizer = BertTokenizerFast.from_pretrained(name, local_files_only=True)
            model = BertForMaskedLM.from_pretrained(name, local_files_only=True)
    except (OSError, ValueError):
        # Not in the cache (transformers says so with an OSError) or an incomplete download.
        return small_bert(seed, why=f"{name} is not in the local Hugging Face cache")
    model.eval()
    return LoadedBert(
        tokenizer,
        model,
        pretrained=True,
        description=(
            f"{name} from the local Hugging Face cache: a pre-trained BERT "
            f"({model.config.num_hidden_layers} layers, hidden size {model.config.hidden_size}, "
            f"vocabulary of {len(tokenizer)} WordPiece tokens)."
        ),
    )


def small_bert(seed: int = 0, why: str = "the stand-in was asked for") -> LoadedBert:
    """The stand-in: a WordPiece vocabulary learned from the course's corpus, and a small BERT
    trained on that corpus's sentences (see ``train_on_corpus``); `why` opens its description."""
    _offline_and_quiet()
    from transformers import BertConfig, BertForMaskedLM

    tokenizer = course_wordpiece_tokenizer()
    config = BertConfig(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        hidden_dropout_prob=0.0,  # a text to learn by heart: dropout would only slow it down
        attention_probs_dropout_prob=0.0,
        **SMALL_BERT,
    )
    # Seeded on a forked RNG: the same weights every time, and the caller's RNG is untouched.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BertForMaskedLM(config)
    steps = STANDIN_TRAINING["steps"]
    print(f"Training the stand-in BERT ({steps} steps, about half a minute) ...",
          flush=True)  # a wait the reader can read
    losses = train_on_corpus(model, tokenizer, seed=seed)
    model.eval()
    return LoadedBert(
        tokenizer,
        model,
        pretrained=False,
        description=(
            f"{why}, so this notebook uses a stand-in: a WordPiece vocabulary of "
            f"{len(tokenizer)} tokens learned from mlmcourse/teaching/data/{CORPUS.name} "
            f"({_word_count()} words on the telegraph, {_token_count(tokenizer)} tokens once "
            "punctuation is split off), and a small BertForMaskedLM "
            f"({SMALL_BERT['num_hidden_layers']} layers, hidden size {SMALL_BERT['hidden_size']}) "
            f"trained just now on that text for {len(losses)} Adam steps (its MLM loss fell "
            f"from {losses[0]:.2f} to {losses[-1]:.2f}).\n"
            "It has learned that text by heart, the paragraph below included: it can fill in "
            "masked words of sentences it has read, so its loss and predictions are worth "
            "reading; it knows almost no English beyond them, so its predictions on a new "
            "sentence are mostly wrong (Step 7 tries one)."
        ),
    )


def corpus_sentences(corpus: Path = CORPUS) -> list[str]:
    """The corpus's sentences, one string each (a sentence ends at ``.``, ``!`` or ``?``)."""
    return [sentence for paragraph in _paragraphs(corpus)
            for sentence in re.split(r"(?<=[.!?])\s+", paragraph) if sentence]


def train_on_corpus(model: Any, tokenizer: Any, seed: int = 0, steps: int | None = None,
                    corpus: Path = CORPUS) -> list[float]:
    """Adam on ``model``'s masked-LM loss over every sentence of ``corpus``, one batch per step;
    returns the loss of each step.

    Each step corrupts the sentences afresh with Hugging Face's ``DataCollatorForLanguageModeling``
    (15% of the positions, 80/10/10) from its own generator seeded with ``seed``. It runs on one
    thread, so the trained weights are the same on every run and every machine with the same
    PyTorch (several threads may add a sum's terms in another order).
    """
    from transformers import DataCollatorForLanguageModeling

    settings = STANDIN_TRAINING
    examples = [{"input_ids": ids} for ids in tokenizer(corpus_sentences(corpus))["input_ids"]]
    collator = DataCollatorForLanguageModeling(
        tokenizer, mlm_probability=settings["mlm_probability"], seed=seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=settings["lr"])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    model.train()
    losses = []
    try:
        for _ in range(settings["steps"] if steps is None else steps):
            batch = collator(examples)
            loss = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                         labels=batch["labels"]).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    finally:
        torch.set_num_threads(threads)
        model.eval()
    return losses


def _paragraphs(corpus: Path) -> list[str]:
    return [" ".join(p.split()) for p in corpus.read_text(encoding="utf-8").split("\n\n")]


def _word_count(corpus: Path = CORPUS) -> int:
    """The words of ``corpus``, as a reader counts them (split at spaces)."""
    return len(corpus.read_text(encoding="utf-8").split())


def _token_count(tokenizer: Any, corpus: Path = CORPUS) -> int:
    """The WordPiece tokens of ``corpus``'s text, without [CLS] and [SEP]."""
    return sum(len(ids) for ids in tokenizer(corpus_sentences(corpus),
                                             add_special_tokens=False)["input_ids"])


def course_wordpiece_tokenizer(corpus: Path = CORPUS) -> Any:
    """A ``BertTokenizerFast`` whose WordPiece vocabulary is learned from ``corpus``.

    The pieces are learned with the ``tokenizers`` library's BPE trainer, which breaks ties by
    the pieces' ids and so gives the same vocabulary on every run. (Its ``WordPieceTrainer``
    numbers the ``##`` pieces in hash-map order, so its vocabulary changes from run to run.)
    Every learned piece may start a word (``cable``) or continue one (``##cable``), and the
    tokenizer splits a word greedily into the longest pieces it knows, as BERT's does.
    """
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import BertTokenizerFast

    paragraphs = _paragraphs(corpus)
    learner = Tokenizer(models.BPE(unk_token="[UNK]"))
    learner.normalizer = normalizers.BertNormalizer(lowercase=True)  # the uncased BERT's
    learner.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.BpeTrainer(
        vocab_size=SMALL_VOCAB_MERGES,
        min_frequency=1,
        special_tokens=list(SPECIAL_TOKENS),
        show_progress=False,
    )
    learner.train_from_iterator(paragraphs, trainer)
    by_id = sorted(learner.get_vocab().items(), key=lambda item: item[1])
    pieces = [token for token, _ in by_id if token not in SPECIAL_TOKENS]
    vocabulary = [*SPECIAL_TOKENS, *pieces, *(CONTINUATION + piece for piece in pieces)]
    return BertTokenizerFast(
        vocab={token: index for index, token in enumerate(vocabulary)},
        do_lower_case=True,
        model_max_length=SMALL_BERT["max_position_embeddings"],
    )


# ---- the MLM head at the selected positions only (notebook 6, Step 6; `bench head`) ----------


def mlm_head(hidden_size: int, vocab_size: int, seed: int = 0) -> Any:
    """A freshly initialised ``BertLMPredictionHead`` (``BertForMaskedLM.cls.predictions``):
    dense H -> H, GELU, LayerNorm, then the decoder H -> V. Seeded on a forked RNG."""
    _offline_and_quiet()
    from transformers import BertConfig
    from transformers.models.bert.modeling_bert import BertLMPredictionHead

    # The attention settings do not matter to the head; one head divides every hidden size.
    config = BertConfig(hidden_size=hidden_size, vocab_size=vocab_size, num_attention_heads=1)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return BertLMPredictionHead(config)


def full_logits_loss(head, hidden: torch.Tensor, labels: torch.Tensor, loss_fn) -> torch.Tensor:
    """The walkthrough's path: the head at every position ([B, L, V] logits), then the loss.

    `hidden` is the last hidden state [B, L, H]; `labels` [B, L] holds -100 where nothing is
    predicted; `loss_fn(logits, labels)` is a masked LM loss on [B, L, V] and [B, L].
    """
    return loss_fn(head(hidden), labels)


def selected_only_loss(head, hidden: torch.Tensor, labels: torch.Tensor, loss_fn,
                       ignore_index: int = -100) -> torch.Tensor:
    """Production BERT's path: gather the hidden states of the selected sites, then the head.

    The head is applied row by row, and the unselected rows never reach the loss, so leaving
    them out changes nothing but the cost: the [H, V] product and its gradient are paid for the
    |S| selected rows (about 15% of B * L) instead of all of them. The |S| gathered rows go to
    `loss_fn` as one sequence: logits [1, |S|, V], labels [1, |S|].
    """
    at = labels != ignore_index  # [B, L]
    logits = head(hidden[at])  # [|S|, V]: gather first, then the head
    return loss_fn(logits.unsqueeze(0), labels[at].unsqueeze(0))


def cross_entropy_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The loss as ``BertForMaskedLM`` computes it: ``nn.CrossEntropyLoss()`` on the flattened
    logits (``ignore_index=-100``, the mean over the selected sites)."""
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())
