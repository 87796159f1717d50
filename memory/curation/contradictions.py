"""Does a candidate fact contradict a known one? Pure: same subject, different claim.

Same subject: the Jaccard similarity of the two texts' content words (numbers and negations left out, so
"42 is even" and "42 is not even" share all their words) is at least `THRESHOLD`. Different claim: the
numbers differ, or exactly one of the two is negated. Anything subtler is left to the configured LLM judge.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

THRESHOLD = 0.5
_WORD = re.compile(r"[a-z][a-z_']*|\d+(?:[.,]\d+)?")
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)?$")
NEGATIONS = frozenset({"not", "no", "never", "none", "cannot", "isn't", "aren't", "doesn't", "don't", "won't", "false", "odd"})
# "odd"/"even" and similar opposites count as a negation of each other through this table.
OPPOSITES = {"odd": "even", "false": "true"}
STOP = frozenset({"a", "an", "the", "is", "are", "was", "be", "of", "and", "or", "to", "in", "on", "it", "its", "as", "at", "by", "for"})


@dataclass(frozen=True)
class Conflict:
    """Why a candidate contradicts a known fact."""

    similarity: float
    why: str


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _subject(text: str) -> set[str]:
    words = set()
    for word in _words(text):
        if _NUMBER.match(word) or word in STOP:
            continue
        word = OPPOSITES.get(word, word)
        if word not in NEGATIONS:
            words.add(word)
    return words


def _numbers(text: str) -> set[str]:
    return {w.replace(",", ".") for w in _words(text) if _NUMBER.match(w)}


def _negated(text: str) -> bool:
    return sum(1 for word in _words(text) if word in NEGATIONS) % 2 == 1


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of the content words."""
    wa, wb = _subject(a), _subject(b)
    return len(wa & wb) / len(wa | wb) if wa | wb else 0.0


def conflict(candidate: str, known: str, *, threshold: float = THRESHOLD) -> Conflict | None:
    """A Conflict when both speak of the same thing but say something different, else None."""
    if " ".join(candidate.split()).lower() == " ".join(known.split()).lower():
        return None
    score = similarity(candidate, known)
    if score < threshold:
        return None
    if _numbers(candidate) != _numbers(known):
        return Conflict(round(score, 3), "numbers differ")
    if _negated(candidate) != _negated(known):
        return Conflict(round(score, 3), "one negates the other")
    return None


def conflicts(candidate: str, known: Iterable[tuple[str, str]], *, threshold: float = THRESHOLD) -> list[tuple[str, Conflict]]:
    """The known (ref, text) pairs the candidate contradicts, most similar first."""
    found = [(ref, c) for ref, text in known if (c := conflict(candidate, text, threshold=threshold)) is not None]
    return sorted(found, key=lambda pair: -pair[1].similarity)


JUDGE_MARK = "AWP-CONTRADICTION"


def near(candidate: str, known: Iterable[tuple[str, str]], *, threshold: float = THRESHOLD) -> list[tuple[str, str]]:
    """The known (ref, text) pairs on the same subject that the rules do not call a contradiction (for the judge)."""
    return [(ref, text) for ref, text in known
            if similarity(candidate, text) >= threshold and conflict(candidate, text, threshold=threshold) is None
            and " ".join(candidate.split()).lower() != " ".join(text.split()).lower()]  # fmt: skip


def judge_messages(candidate: str, known: str) -> list[dict[str, str]]:
    """The chat messages asking an LLM whether two statements contradict each other (memory.outbound masks them)."""
    return [
        {"role": "system", "content": f"{JUDGE_MARK}: you compare two statements from an agent memory. "
                                      'Answer only JSON: {"contradicts": true|false, "why": "<one short sentence>"}.'},
        {"role": "user", "content": f"Known fact: {known}\nNew candidate: {candidate}\nDo they contradict each other?"},
    ]  # fmt: skip


def parse_verdict(answer: str, similarity_score: float) -> Conflict | None:
    """The judge's answer as a Conflict (None when it says no or answers something unreadable)."""
    import json

    start, end = answer.find("{"), answer.rfind("}")
    try:
        data = json.loads(answer[start : end + 1]) if start >= 0 < end else {}
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("contradicts") is not True:
        return None
    why = " ".join(str(data.get("why") or "the judge says they differ").split())[:200]
    return Conflict(round(similarity_score, 3), f"LLM judge: {why}")
