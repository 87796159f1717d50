"""Recall (pure): which episodes an agent may see, how salient each one is, and the block it would receive.

An episode is one thing that happened to the experiment's agents, taken from the ledger: a worker result,
a DAG step's output, a blackboard post, a manager decision or validation, a run's start or completion, a
reflection. What agent X recalls:
- its own episodes, whole;
- another agent's output (results, DAG steps, blackboard posts) only through the protocol's sharing rules,
  by the same `state.sharing.view_for` the State tab's "as seen by" uses (so both always agree);
- the public record (task, decisions, validations, run completion, reflections) as everyone witnesses it,
  minus `never_share` fields at any depth.

Salience follows the reference's formula, with the weights normalised so any override stays in [0, 1]:

    salience = (w_rel·relevance + w_rec·recency + w_imp·importance) / (w_rel + w_rec + w_imp)
    recency  = exp(-λ·Δturn)

Turns are iterations (delegation loops) or DAG steps within a run; across the runs of an experiment they
are laid end to end on one turn clock (run order, then turn), so an earlier run is older by its length.
"""

from __future__ import annotations

import bisect
import heapq
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from experiments.jsonb import json_document
from state.redaction import REDACTED, row_starts, rows_holding
from state.sharing import SharingPolicy, view_for

# Importance by AWP event kind. The reference scores its own kinds; ours map onto them by role:
#   run.start            ~ run.started      0.3  the task everyone is given
#   board.post           ~ agent.spoke      0.5  table talk between siblings
#   worker.complete      ~ clue.found       0.8  a worker's finding
#   state.snapshot       ~ clue.found       0.8  a DAG step's output (the DAG's "worker result")
#   reflection           = agent.reflected  0.85 a compacted belief
#   iteration.decision   ~ judge.verdict    0.9  the manager's verdict on an iteration
#   iteration.validation ~ judge.verdict    0.9  the validators' verdict
#   run.complete         ~ verdict.final    1.0  how the run ended
# Anything else counts 0.5, the reference's default.
IMPORTANCE: dict[str, float] = {
    "run.start": 0.3,
    "board.post": 0.5,
    "worker.complete": 0.8,
    "state.snapshot": 0.8,
    "reflection": 0.85,
    "iteration.decision": 0.9,
    "iteration.validation": 0.9,
    "run.complete": 1.0,
}
DEFAULT_IMPORTANCE = 0.5
# Memory search's optional salience ranking scores chunks by tier: curated long-term memory like a final
# verdict's weight less a little, episodic results like findings, logs and notes at the default.
TIER_IMPORTANCE: dict[str, float] = {"long_term": 0.9, "episodic": 0.8, "working": 0.5, "notes": 0.5}
# The public record: visible to every agent (as the reference makes verdicts and reflections global).
PUBLIC_KINDS = frozenset({"run.start", "iteration.decision", "iteration.validation", "run.complete", "reflection"})
# Outputs of one agent: seen by others only through the sharing rules.
OUTPUT_KINDS = frozenset({"worker.complete", "state.snapshot", "board.post"})
EPISODE_KINDS = PUBLIC_KINDS | OUTPUT_KINDS
MAX_TOP_K = 100
BELOW_CUT = 5
_WORD = re.compile(r"\w+")
_MAX_TEXT = 600


class RecallConfigError(ValueError):
    """A `memory.salience` or `memory.reflection` setting that cannot be used."""


@dataclass(frozen=True)
class SalienceWeights:
    """The protocol's `memory.salience` (defaults as the reference sets them)."""

    relevance: float = 0.3
    recency: float = 0.4
    importance: float = 0.3
    decay_lambda: float = 0.1
    top_k: int = 8

    @classmethod
    def from_config(cls, memory_config: Mapping[str, Any] | None) -> SalienceWeights:
        """`memory.salience: {w_relevance, w_recency, w_importance, decay_lambda, top_k}`; refuses bad values."""
        section = (memory_config or {}).get("salience") or {}
        if not isinstance(section, Mapping):
            raise RecallConfigError("memory.salience must be a mapping.")
        values: dict[str, Any] = {}
        for key, name in (("w_relevance", "relevance"), ("w_recency", "recency"), ("w_importance", "importance"),
                          ("decay_lambda", "decay_lambda")):  # fmt: skip
            if key in section:
                value = section[key]
                if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                    raise RecallConfigError(f"memory.salience.{key} must be a number ≥ 0.")
                values[name] = float(value)
        if "top_k" in section:
            top_k = section["top_k"]
            if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
                raise RecallConfigError(f"memory.salience.top_k must be an integer from 1 to {MAX_TOP_K}.")
            values["top_k"] = top_k
        weights = cls(**values)
        if weights.relevance + weights.recency + weights.importance <= 0:
            raise RecallConfigError("memory.salience weights must not all be 0.")
        return weights


def reflection_every(memory_config: Mapping[str, Any] | None) -> int | None:
    """`memory.reflection: {every: N}` → N, or None when reflection is off (the default)."""
    section = (memory_config or {}).get("reflection")
    if section in (None, False):
        return None
    if not isinstance(section, Mapping):
        raise RecallConfigError("memory.reflection must be a mapping like {every: 10}.")
    every = section.get("every")
    if every in (None, 0, False):
        return None
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise RecallConfigError("memory.reflection.every must be a positive integer.")
    return every


def importance(kind: str) -> float:
    """How much an episode of `kind` matters by itself."""
    return IMPORTANCE.get(kind, DEFAULT_IMPORTANCE)


def recency(delta_turns: float, decay_lambda: float) -> float:
    """exp(-λ·Δturn): 1 for the current turn, falling with every turn back (no decay when λ = 0)."""
    return math.exp(-decay_lambda * max(0.0, delta_turns))


def salience(relevance: float, recency_score: float, importance_score: float, weights: SalienceWeights) -> float:
    """The one salience function: the weighted blend of the three components, normalised into [0, 1]."""
    total = weights.relevance + weights.recency + weights.importance
    if total <= 0:
        return 0.0
    score = (
        weights.relevance * _unit(relevance) + weights.recency * _unit(recency_score) + weights.importance * _unit(importance_score)
    )
    return score / total


def _unit(value: float) -> float:
    return min(1.0, max(0.0, value))


def words(text: str) -> frozenset[str]:
    """The lower-case word set keyword relevance compares."""
    return frozenset(_WORD.findall(text.lower()))


def keyword_relevance(query_words: frozenset[str], text: str) -> float:
    """Jaccard overlap of the query's words and the text's words (0 without a query)."""
    if not query_words:
        return 0.0
    lowered = text.lower()
    # Most texts share no word with the query: a substring test rejects them before tokenising.
    if not any(word in lowered for word in query_words):
        return 0.0
    text_words = frozenset(_WORD.findall(lowered))
    if not text_words:
        return 0.0
    return len(query_words & text_words) / len(query_words | text_words)


# -- pruning what another agent sees in part -------------------------------------------------------------------
#
# An output seen in part is scored in Python: its `fields` are redacted, filtered by the sharing rules and rendered
# before keyword relevance can be taken, and that costs ~70 µs an episode. `keyword_may_match` rejects most of them
# on the stored JSON alone (a few µs). Its False proves keyword relevance 0 for every reader, because every word of
# the content is a substring of the stored JSON (Python-lower-cased, final sigma folded) or of the mask:
# - the content is `render_fields` of `view_for`/`drop_fields` of `redact(fields)`: filtering only drops keys;
#   rendering copies a string as it is, a key as it is, anything else as `json.dumps(…, ensure_ascii=False)`, and
#   joins them with "; " and ": " (no word character), truncating with "…" (a prefix of a word is a substring);
# - redaction keeps a string's text between masked spans and writes REDACTED ("[redacted]", bracketed, so no
#   word runs across it) in their place, or in place of a whole value; the one exception re-serialises a string
#   holding a JSON document (`_redact_json_text`), so a row with such a string is always kept (_JSON_IN_STRING);
# - Postgres prints jsonb strings with the escapes `json.dumps` uses (\b \f \n \r \t \" \\ and \u00xx
#   below 0x20), and the word characters of a string escaped or not are the same runs (only non-word characters
#   are escaped); keys are strings;
# - a number is rendered as Python spells the float json.loads makes of Postgres's digits: the same digits (less
#   trailing zeros) unless it is below 1e-4 (Python writes 1e-05) or has 16 digits or more (Python may round), so
#   a row holding such a number is kept when a query word could be part of a number (only digits and "e");
# - str.lower maps each character on its own except Σ, which becomes ς at a word's end and σ elsewhere (so the
#   context, which differs between the JSON and the content, is folded away: ς → σ on both sides).
# tests/memory/test_recall_pure.py tries to break each step (hypothesis); test_recall_api.py holds recall_for,
# which prunes with it, equal to the reference over every episode.
_MASK = REDACTED.lower()
_JSON_IN_STRING = re.compile(r'"(?:\s|\\[bfnrt]|\\u[0-9a-f]{4})*[\[{]')
_SPELLED_OTHERWISE = re.compile(r"0\.0000|[0-9][0-9.]{15}")
_NUMBER_PART = re.compile(r"[0-9e]+")


def word_needles(query_words: frozenset[str]) -> list[str] | None:
    """The query's words as `keyword_may_match` looks for them (Σ folded); None when a mask may hold one."""
    needles = sorted(word.replace("ς", "σ") for word in query_words)
    return None if any(needle in _MASK for needle in needles) else needles


def keyword_may_match(query_words: frozenset[str], stored_fields: str) -> bool:
    """Whether what any reader sees of an output, whose `fields` Postgres prints as `stored_fields`, may share a word
    with the query (False: keyword relevance 0 for every reader, redaction and sharing rules whatever they are)."""
    if not query_words:
        return False
    needles = word_needles(query_words)
    if needles is None or _JSON_IN_STRING.search(stored_fields):
        return True
    if any(_NUMBER_PART.fullmatch(needle) for needle in needles) and _SPELLED_OTHERWISE.search(stored_fields):
        return True
    haystack = stored_fields.lower().replace("ς", "σ")
    return any(needle in haystack for needle in needles)


def keyword_may_match_rows(query_words: frozenset[str], stored: Sequence[str]) -> list[bool]:
    """`keyword_may_match` of each of many rows, each test run once over all of them (a C-speed scan of their text
    joined by NUL, which no stored JSON holds and no test matches across) instead of once a row."""
    if not query_words or not stored:
        return [False] * len(stored)
    needles = word_needles(query_words)
    if needles is None:
        return [True] * len(stored)
    # Lower-cased row by row: a character's lower case may be longer (İ), so the rows' starts are taken after.
    lowered = [row.lower() for row in stored]
    hit = rows_holding("\0".join(lowered).replace("ς", "σ"), row_starts(lowered), needles)
    joined, starts = "\0".join(stored), row_starts(stored)
    hit |= {bisect.bisect_right(starts, found.start()) - 1 for found in _JSON_IN_STRING.finditer(joined)}
    if any(_NUMBER_PART.fullmatch(needle) for needle in needles):
        hit |= {bisect.bisect_right(starts, found.start()) - 1 for found in _SPELLED_OTHERWISE.finditer(joined)}
    return [row in hit for row in range(len(stored))]


@dataclass(frozen=True)
class Episode:
    """One recallable episode. `fields` is the structured output (None for text-only episodes)."""

    key: str
    agent_id: str
    kind: str
    run_id: str
    turn: int
    clock: int
    text: str
    fields: Mapping[str, Any] | None = None
    source: str = ""


@dataclass(frozen=True)
class Scored:
    """An episode as one reader recalls it: the content it may see and the four scores."""

    episode: Episode
    content: str
    relevance: float
    recency: float
    importance: float
    salience: float
    exact: float = 0.0  # the unrounded salience the ranking uses


@dataclass
class RecallBlock:
    """The top-k an agent receives (in turn order, as the prompt reads it) and those just below the cut."""

    agent_id: str
    turn: int
    query: str
    weights: SalienceWeights
    items: list[Scored] = field(default_factory=list)
    below: list[Scored] = field(default_factory=list)

    @property
    def block(self) -> str:
        """The exact text the agent would receive."""
        return render_block(self.items)


def render_fields(fields: Mapping[str, Any]) -> str:
    """An output as one short text: its summary first, then each other field (never a raw dump of everything)."""
    parts: list[str] = []
    summary = fields.get("summary")
    if isinstance(summary, str) and summary.strip():
        parts.append(summary.strip())
    for key, value in fields.items():
        if key == "summary" or str(key).startswith("_"):
            continue
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
        parts.append(f"{key}: {shown}")
    text = "; ".join(parts)
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"


def drop_fields(value: Any, names: frozenset[str]) -> Any:
    """`value` without keys in `names` at any depth."""
    if isinstance(value, dict):
        return {k: drop_fields(v, names) for k, v in value.items() if k not in names}
    if isinstance(value, list):
        return [drop_fields(item, names) for item in value]
    return value


def visible_content(episode: Episode, reader: str, policy: SharingPolicy) -> str | None:
    """What `reader` may recall of `episode` (None: nothing) under the protocol's sharing rules."""
    if episode.agent_id == reader:
        return episode.text
    if episode.kind in PUBLIC_KINDS:
        if episode.fields is None or not policy.never_share:
            return episode.text
        return render_fields(drop_fields(dict(episode.fields), policy.never_share))
    if episode.fields is None:
        return None
    seen = view_for({episode.agent_id: dict(episode.fields)}, reader, policy, {episode.agent_id})
    shown = seen.get(episode.agent_id)
    if not isinstance(shown, dict) or not shown:
        return None
    return render_fields(shown)


def score_episodes(
    episodes: Iterable[Episode],
    *,
    reader: str,
    policy: SharingPolicy,
    weights: SalienceWeights,
    now: int,
    query: str = "",
    relevance: Mapping[str, float] | None = None,
) -> list[Scored]:
    """Every episode `reader` may see at turn `now`, with the content it sees and its four scores.

    `relevance` may carry semantic scores by episode key; episodes without one (or seen only in part) use
    keyword relevance.
    """
    query_words = words(query)
    scored: list[Scored] = []
    for episode in episodes:
        if episode.clock > now:
            continue  # not yet happened at the recalled turn
        content = visible_content(episode, reader, policy)
        if content is None:
            continue
        # A semantic score describes the whole episode: used only when the reader sees the whole of it, so the
        # ranking never depends on fields the sharing rules hide.
        rel = relevance.get(episode.key) if relevance is not None and content == episode.text else None
        if rel is None:
            rel = keyword_relevance(query_words, content)
        rec = recency(now - episode.clock, weights.decay_lambda)
        imp = importance(episode.kind)
        total = salience(rel, rec, imp, weights)
        scored.append(Scored(episode, content, round(rel, 4), round(rec, 4), imp, round(total, 4), total))
    return scored


def cut(scored: Iterable[Scored], *, k: int) -> tuple[list[Scored], list[Scored]]:
    """The top k (in turn order, as the prompt reads them) and the BELOW_CUT next ones (best first).

    Ties are broken by the later turn clock, then by key, so the block is deterministic.
    """
    ranked = heapq.nlargest(k + BELOW_CUT, scored, key=lambda s: (s.exact, s.episode.clock, s.episode.key))
    top = sorted(ranked[:k], key=lambda s: (s.episode.clock, s.episode.key))
    return top, ranked[k:]


def recall(
    episodes: Iterable[Episode],
    *,
    reader: str,
    policy: SharingPolicy,
    weights: SalienceWeights,
    query: str = "",
    turn: int | None = None,
    top_k: int | None = None,
    relevance: Mapping[str, float] | None = None,
) -> RecallBlock:
    """The recall block of `reader` at `turn` (default: the latest episode's turn): the reference implementation."""
    episodes = list(episodes)
    now = turn if turn is not None else max((e.clock for e in episodes), default=0)
    scored = score_episodes(episodes, reader=reader, policy=policy, weights=weights, now=now, query=query, relevance=relevance)
    items, below = cut(scored, k=top_k or weights.top_k)
    return RecallBlock(agent_id=reader, turn=now, query=query, weights=weights, items=items, below=below)


def split_producers(policy: SharingPolicy, reader: str, producers: Iterable[str]) -> tuple[list[str], list[str]]:
    """Other producers whose outputs `reader` sees whole (bar never_share fields) and those it sees in part."""
    whole, partial = [], []
    for producer in producers:
        if producer == reader:
            continue
        allowed = policy.visible_fields(producer, reader)
        if allowed is None and not policy.unshareable.get(producer):
            whole.append(producer)
        elif allowed is None or allowed:
            partial.append(producer)
    return whole, partial


def oldest_clock_that_can_rank(weights: SalienceWeights, *, now: int, threshold: float | None, has_query: bool) -> int | None:
    """The oldest turn at which an episode could still score ≥ `threshold` (the k + BELOW_CUT-th best so far);
    None when no bound holds (every episode must be scored). Exact: uses the largest relevance and importance."""
    total = weights.relevance + weights.recency + weights.importance
    if threshold is None or weights.recency <= 0 or weights.decay_lambda <= 0 or total <= 0:
        return None
    best_rest = weights.relevance * (1.0 if has_query else 0.0) + weights.importance * max(1.0, *IMPORTANCE.values())
    needed = (threshold * total - best_rest) / weights.recency - 1e-9  # the recency it takes; slack keeps ties
    if needed <= 0:
        return None
    if needed > 1:
        return now + 1  # even the current turn cannot reach it
    return now - math.floor(-math.log(needed) / weights.decay_lambda)


def render_block(items: Iterable[Scored]) -> str:
    """`[turn 003][worker.complete][sal=0.81] text` lines in turn order, or a sentence when there are none."""
    lines = [
        f"[turn {s.episode.clock:03d}][{s.episode.kind}][sal={s.salience:.2f}] {' '.join(s.content.split())}" for s in items
    ]
    return "\n".join(lines) if lines else "(no salient memories)"


def turn_clock(run_lengths: Iterable[tuple[str, int]]) -> dict[str, int]:
    """Offsets that lay runs end to end on one turn clock: run → turns of all runs before it."""
    offsets: dict[str, int] = {}
    total = 0
    for run_id, length in run_lengths:
        offsets[run_id] = total
        total += max(0, length)
    return offsets


# -- reflections -------------------------------------------------------------------------------------------

REFLECTION_MARK = "AWP-REFLECTION"
MAX_BELIEF_CHARS = 2000


class MalformedReflection(ValueError):
    """The endpoint's answer holds no usable belief."""


def reflection_due(seen: int, covered: int, every: int | None) -> bool:
    """Whether an agent that has seen `seen` episodes, `covered` of them already reflected on, is due."""
    return bool(every) and seen - covered >= (every or 0)


def reflection_content(episode: Episode, reflector: str, policy: SharingPolicy) -> str | None:
    """What a reflection of `reflector` may compact from `episode`.

    A belief is public (every agent recalls it), so even the reflector's own never_share and unshareable
    fields stay out of the prompt: nothing reaches other agents through a belief that they could not see.
    """
    if episode.fields is not None and (episode.agent_id == reflector or episode.kind in PUBLIC_KINDS):
        # The public record (decisions, run.complete) quotes outputs: every agent's unshareable fields stay out.
        hidden = policy.never_share.union(*policy.unshareable.values())
        return render_fields(drop_fields(dict(episode.fields), hidden))
    return visible_content(episode, reflector, policy)


def reflection_messages(agent_id: str, contents: list[str]) -> list[dict[str, str]]:
    """The chat messages asking the model to compact `contents` (already visible to the agent) into one belief."""
    listing = "\n".join(f"{n}. {' '.join(text.split())}" for n, text in enumerate(contents, 1))
    system = (
        f"{REFLECTION_MARK}: you compact an agent's recent memories into one high-level belief. "
        'Answer with JSON only: {"belief": "<one or two sentences>"}.'
    )
    user = f"Agent: {agent_id}\nRecent episodes ({len(contents)}):\n{listing}\n\nWhat does {agent_id} now believe?"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_reflection(answer: str) -> str:
    """The belief in a chat answer: JSON `{"belief": …}` (also inside a code fence) or plain prose."""
    text = (answer or "").strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    if text.startswith("{"):
        data = json_document(text)
        if not isinstance(data, dict):
            raise MalformedReflection("The answer looks like JSON but does not parse as an object.")
        belief = next((data.get(key) for key in ("belief", "reflection", "summary") if isinstance(data.get(key), str)), None)
        if belief is None:
            raise MalformedReflection('The JSON answer has no "belief" text.')
        text = belief.strip()
    if not text:
        raise MalformedReflection("The answer is empty.")
    if len(text) > MAX_BELIEF_CHARS:
        raise MalformedReflection(f"The belief is longer than {MAX_BELIEF_CHARS} characters.")
    return " ".join(text.split())
