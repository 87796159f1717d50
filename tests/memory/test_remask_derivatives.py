"""A secret learnt after its derivatives were stored is masked in them too: episode texts and word sets (no
recall query can confirm a guess of a masked value), reflection prompts and answers, chunks."""

from __future__ import annotations

import json

import pytest

from experiments.ingest import EventIn, append_events
from memory import recall
from memory.episodes import recall_for
from memory.models import Episode, MemoryChunk, Reflection
from tests.factories import make_experiment, make_run

pytestmark = pytest.mark.django_db

SECRET = "zebraquartz-Vq9931kk"


def _push(run, kind, payload, key, agent="researcher"):  # type: ignore[no-untyped-def]
    return append_events(run, [EventIn(kind=kind, dedupe_key=key, agent_id=agent, iteration=1, payload=payload)])


def test_a_later_learnt_secret_leaves_episode_texts_word_sets_and_recall_relevance():
    experiment = make_experiment()
    run = make_run(experiment)
    _push(run, "worker.complete", {"worker_id": "researcher", "summary": f"the vault answered {SECRET} today",
                                   "notes": {"raw": f"seen {SECRET}"}}, "e1")  # fmt: skip
    episode = Episode.objects.get(experiment=experiment, kind="worker.complete")
    assert SECRET in episode.text and recall.words(SECRET) <= set(episode.words)  # not yet known: nothing to mask
    assert any(item.relevance > 0 for item in recall_for(experiment=experiment, agent_id="analyst", query=SECRET).items)

    _push(run, "tool.result", {"api_key": SECRET}, "e2")  # now it is a known secret

    episode.refresh_from_db()
    assert SECRET not in episode.text and "[redacted]" in episode.text
    assert not recall.words(SECRET) & set(episode.words), episode.words
    assert SECRET not in json.dumps(episode.words)
    # A guess of the masked value is no more relevant than any other word: nothing to confirm.
    for agent in ("analyst", "researcher"):
        block = recall_for(experiment=experiment, agent_id=agent, query=SECRET)
        assert all(item.relevance == 0 for item in [*block.items, *block.below])
        assert SECRET not in block.block


def test_a_later_learnt_secret_is_masked_in_stored_reflection_prompts_and_answers():
    experiment = make_experiment()
    reflection = Reflection.objects.create(
        experiment=experiment, agent_id="writer", trigger="manual",
        prompt=[{"role": "user", "content": f"episode: used {SECRET}"}], answer=f'{{"belief": "keep {SECRET}"}}',
        belief=f"keep {SECRET}",
    )  # fmt: skip
    MemoryChunk.objects.create(experiment=experiment, tier="episodic", ref_key="refl:x", source="s", content=f"keep {SECRET}")
    _push(make_run(experiment), "tool.result", {"password": SECRET}, "e1")
    reflection.refresh_from_db()
    stored = json.dumps(reflection.prompt) + reflection.answer + reflection.belief
    assert SECRET not in stored and "[redacted]" in stored
    assert SECRET not in MemoryChunk.objects.get(ref_key="refl:x").content
