"""The HOLDOUT4 corpus part is sound by itself: its planted values are in its texts, and its shapes are new.

Checks only the corpus; no detector runs here (the part is meant to be measured blind).
"""

from __future__ import annotations

from tests.corpus.secrets.holdout import generate as holdout
from tests.corpus.secrets.holdout2 import generate as holdout2
from tests.corpus.secrets.holdout3 import generate as holdout3
from tests.corpus.secrets.holdout4 import generate as holdout4
from tests.corpus.secrets.tune import generate as tune


def test_every_planted_value_is_in_its_text_and_long_enough():
    for doc in holdout4.documents():
        for value in doc.secrets:
            assert value in doc.text, (doc.shape, value)
            assert len(value) >= 8, (doc.shape, value)


def test_credential_documents_come_first_then_clean_ones():
    docs = holdout4.documents()
    credential, clean = docs[: len(holdout4.SHAPES)], docs[len(holdout4.SHAPES) :]
    assert [d.shape for d in credential] == list(holdout4.SHAPES)
    assert [d.shape for d in clean] == list(holdout4.CLEAN_SHAPES)
    assert all(1 <= len(d.secrets) <= 2 for d in credential)
    assert all(d.secrets == () for d in clean)
    assert len(credential) >= 50 and len(clean) >= 15


def test_shapes_are_unique_and_new_to_the_corpus():
    names = [d.shape for d in holdout4.documents()]
    assert len(names) == len(set(names))
    earlier = {d.shape for d in tune.documents(per_shape=1)} | {d.shape for d in holdout.documents()}
    earlier |= {d.shape for d in holdout2.documents()} | {d.shape for d in holdout3.documents()}
    assert not set(names) & earlier


def test_no_seed_or_planted_value_is_shared_with_the_earlier_parts():
    assert holdout4.SEED not in {tune.SEED, holdout.SEED, holdout2.SEED, holdout3.SEED}
    mine = {v for d in holdout4.documents() for v in d.secrets}
    earlier = {
        v
        for part in (holdout.documents(), holdout2.documents(), holdout3.documents(), tune.documents())
        for d in part
        for v in d.secrets
    }
    assert not mine & earlier


def test_clean_documents_hold_no_value_planted_elsewhere_in_the_part():
    docs = holdout4.documents()
    planted = {v for d in docs for v in d.secrets}
    for doc in docs[len(holdout4.SHAPES) :]:
        assert not any(v in doc.text for v in planted), doc.shape


def test_documents_are_deterministic_for_a_seed_and_vary_with_it():
    assert holdout4.documents() == holdout4.documents(holdout4.SEED)
    assert holdout4.documents(7) == holdout4.documents(7)
    other = holdout4.documents(7)
    for mine, theirs in zip(holdout4.documents(), other, strict=True):
        assert mine.shape == theirs.shape
        if mine.secrets:
            assert mine.secrets != theirs.secrets, mine.shape


def test_planted_values_hold_for_other_seeds_too():
    for seed in range(20):
        for doc in holdout4.documents(seed):
            assert all(len(v) >= 8 and v in doc.text for v in doc.secrets), (seed, doc.shape)
