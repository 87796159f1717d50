"""Each blind part of the secret corpus (HOLDOUT2 to HOLDOUT18) is sound by itself:
its planted values are in its texts, its shapes, seed and values are new against every part written before it,
and it is deterministic.

Checks only the corpus; no detector runs here (the parts are meant to be measured blind).
"""

from __future__ import annotations

from types import ModuleType

import pytest

from tests.corpus.secrets.holdout import generate as holdout
from tests.corpus.secrets.holdout2 import generate as holdout2
from tests.corpus.secrets.holdout3 import generate as holdout3
from tests.corpus.secrets.holdout4 import generate as holdout4
from tests.corpus.secrets.holdout5 import generate as holdout5
from tests.corpus.secrets.holdout6 import generate as holdout6
from tests.corpus.secrets.holdout7 import generate as holdout7
from tests.corpus.secrets.holdout8 import generate as holdout8
from tests.corpus.secrets.holdout9 import generate as holdout9
from tests.corpus.secrets.holdout10 import generate as holdout10
from tests.corpus.secrets.holdout11 import generate as holdout11
from tests.corpus.secrets.holdout12 import generate as holdout12
from tests.corpus.secrets.holdout13 import generate as holdout13
from tests.corpus.secrets.holdout14 import generate as holdout14
from tests.corpus.secrets.holdout15 import generate as holdout15
from tests.corpus.secrets.holdout16 import generate as holdout16
from tests.corpus.secrets.holdout17 import generate as holdout17
from tests.corpus.secrets.holdout18 import generate as holdout18
from tests.corpus.secrets.tune import generate as tune

# In the order they were written, with the least credential and clean documents each promised.
PARTS: list[tuple[ModuleType, int, int]] = [
    (holdout2, 40, 12),
    (holdout3, 40, 12),
    (holdout4, 50, 15),
    (holdout5, 60, 18),
    (holdout6, 60, 18),
    (holdout7, 95, 25),
    (holdout8, 100, 30),
    (holdout9, 110, 35),
    (holdout10, 120, 40),
    (holdout11, 120, 40),
    (holdout12, 220, 40),
    (holdout13, 250, 45),
    (holdout14, 330, 50),
    (holdout15, 360, 55),
    (holdout16, 400, 62),
    (holdout17, 450, 70),
    (holdout18, 465, 75),
]
WRITTEN_BEFORE = [tune, holdout]
IDS = [part.__name__.split(".")[-2] for part, _, _ in PARTS]
blind = pytest.mark.parametrize("part", [part for part, _, _ in PARTS], ids=IDS)


def _earlier(part: ModuleType) -> list[ModuleType]:
    parts = [p for p, _, _ in PARTS]
    return WRITTEN_BEFORE + parts[: parts.index(part)]


def _docs(part: ModuleType) -> list:
    return tune.documents(per_shape=1) if part is tune else part.documents()


@blind
def test_every_planted_value_is_in_its_text_and_long_enough(part):
    for doc in part.documents():
        for value in doc.secrets:
            assert value in doc.text, (doc.shape, value)
            assert len(value) >= 8, (doc.shape, value)


@pytest.mark.parametrize(("part", "least_credential", "least_clean"), PARTS, ids=IDS)
def test_credential_documents_come_first_then_clean_ones(part, least_credential, least_clean):
    docs = part.documents()
    credential, clean = docs[: len(part.SHAPES)], docs[len(part.SHAPES) :]
    assert [d.shape for d in credential] == list(part.SHAPES)
    assert [d.shape for d in clean] == list(part.CLEAN_SHAPES)
    assert all(1 <= len(d.secrets) <= 2 for d in credential)
    assert all(d.secrets == () for d in clean)
    assert len(credential) >= least_credential and len(clean) >= least_clean


@blind
def test_shapes_are_unique_and_new_to_the_corpus(part):
    names = [d.shape for d in part.documents()]
    assert len(names) == len(set(names))
    earlier = {d.shape for p in _earlier(part) for d in _docs(p)}
    assert not set(names) & earlier


@blind
def test_no_seed_or_planted_value_is_shared_with_the_earlier_parts(part):
    assert part.SEED not in {p.SEED for p in _earlier(part)}
    mine = {v for d in part.documents() for v in d.secrets}
    earlier = {v for p in _earlier(part) for d in p.documents() for v in d.secrets}
    assert not mine & earlier


@blind
def test_clean_documents_hold_no_value_planted_elsewhere_in_the_part(part):
    docs = part.documents()
    planted = {v for d in docs for v in d.secrets}
    for doc in docs[len(part.SHAPES) :]:
        assert not any(v in doc.text for v in planted), doc.shape


@blind
def test_documents_are_deterministic_for_a_seed_and_vary_with_it(part):
    assert part.documents() == part.documents(part.SEED)
    assert part.documents(7) == part.documents(7)
    for mine, theirs in zip(part.documents(), part.documents(7), strict=True):
        assert mine.shape == theirs.shape
        if mine.secrets:
            assert mine.secrets != theirs.secrets, mine.shape


@blind
def test_planted_values_hold_for_other_seeds_too(part):
    for seed in range(20):
        for doc in part.documents(seed):
            assert all(len(v) >= 8 and v in doc.text for v in doc.secrets), (seed, doc.shape)
