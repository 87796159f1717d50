"""A corpus of documents holding credentials, as tools and agents write them, for the secret detector.

Nineteen parts written by nineteen generators: `tune` (the shapes the detector was tuned on; the property tests draw
from it), `holdout` (other shapes, other value forms, another seed; written first and never looked at while
tuning: its figure says how the detector does on text it never saw), `holdout2` (a second blind part, written
later without reading the detector: shapes and value forms neither earlier part has) and `holdout3` (a third
blind part, written after HOLDOUT and HOLDOUT2 were spent, with tools and formats none of the others use) and
`holdout4` (a fourth, written after HOLDOUT3 was spent; its figures are printed, its misses never listed, so
it stays blind for whoever tunes the detector) and `holdout5` (a fifth, written in round 7 by an author who read no
detector file; kept blind as HOLDOUT4 is) and `holdout6` (a sixth, written in round 8 by an author who read
no detector file; read in round 9 to find that round's classes) and `holdout7` (a seventh, written in round 9 by an
author who read no detector file; read in round 9 to find that round's second classes) and `holdout8` (an eighth,
written in round 9 after HOLDOUT7 was spent, by an author who read no detector file; read in round 10 to find that
round's classes) and `holdout9` (a ninth, written in round 10 by an author who read no detector file; read in
round 10 to find that round's second classes) and `holdout10` (a tenth, written in round 10 after HOLDOUT9 was
spent, by an author who read no detector file; read in round 11 to find that round's classes) and `holdout11` (an
eleventh, written in round 11 by an author who read no detector file; kept blind in round 11, read in round 12 to
find that round's classes) and `holdout12` (a twelfth, written in round 12 by an author who read no detector file;
kept blind in round 12, read in round 13 to find that round's classes) and `holdout13` (a thirteenth, written in
round 13 by an author who read no detector file; kept blind in round 13, read in round 14 to find that round's
classes) and `holdout14` (a fourteenth, written in round 14 by an author who read no detector file; kept blind: its
figures are printed, its misses never listed) and `holdout15` (a fifteenth, written in round 15 by an author who read
no detector file; kept blind in round 15, read in round 16 to find that round's classes) and `holdout16` (a sixteenth, written in
round 16 by an author who read no detector file; kept blind in round 16, read in round 17 to find that round's classes)
and `holdout17` (a seventeenth, written in round 17 by an author who read no detector file; read blind, then read in
round 17 to find that round's second classes) and `holdout18` (an eighteenth, written in round 17 by an author who
read no detector file; kept blind: its figures are printed, its misses never listed).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Document:
    """One document, the credential values planted in it (empty: a document without a secret), and its shape."""

    shape: str
    text: str
    secrets: tuple[str, ...] = ()
