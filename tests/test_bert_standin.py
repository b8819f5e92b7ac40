"""Notebook 6's stand-in BERT (used when `bert-base-uncased` is not in the local cache): trained on
the course's text, the same on every run, and good at the paragraph it read, not at English."""

from __future__ import annotations

import pytest
import torch

from mlmcourse.teaching import bert_walkthrough

pytestmark = pytest.mark.skipif(not bert_walkthrough.transformers_available(),
                                reason="needs the optional extra (transformers, tokenizers)")
PARAGRAPH_SENTENCE = ("In August 1858 the first telegraph cable across the Atlantic carried a "
                      "message from Queen Victoria to President James Buchanan.")


def fresh_model(tokenizer):
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    return BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), **bert_walkthrough.SMALL_BERT))


def masked_accuracy(loaded, sentence: str) -> float:
    """Each ordinary position masked in turn: the share the model predicts right."""
    tokenizer, model = loaded.tokenizer, loaded.model
    ids = tokenizer(sentence, return_tensors="pt")["input_ids"]
    right = 0
    for t in range(1, ids.shape[1] - 1):
        shown = ids.clone()
        shown[0, t] = tokenizer.mask_token_id
        with torch.no_grad():
            right += int(model(input_ids=shown).logits[0, t].argmax() == ids[0, t])
    return right / (ids.shape[1] - 2)


def test_the_notebooks_paragraph_is_in_the_text_the_stand_in_reads():
    assert PARAGRAPH_SENTENCE in bert_walkthrough.corpus_sentences()


def test_training_is_the_same_on_every_run_and_leaves_the_thread_count():
    tokenizer = bert_walkthrough.course_wordpiece_tokenizer()
    threads = torch.get_num_threads()
    runs = [bert_walkthrough.train_on_corpus(fresh_model(tokenizer), tokenizer, steps=3)
            for _ in range(2)]
    assert runs[0] == runs[1]
    assert torch.get_num_threads() == threads


@pytest.mark.slow  # trains the stand-in: about 15 to 60 s of one core
def test_the_stand_in_fills_in_what_it_read_and_not_what_it_did_not(monkeypatch):
    monkeypatch.setenv(bert_walkthrough.STANDIN_VARIABLE, "1")
    loaded = bert_walkthrough.load_bert()
    assert not loaded.pretrained and "by heart" in loaded.description
    assert masked_accuracy(loaded, PARAGRAPH_SENTENCE) >= 0.7
    assert masked_accuracy(loaded, "The engineers sent a short message to the queen.") <= 0.5
