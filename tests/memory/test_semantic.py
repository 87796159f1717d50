"""Semantic search with the real all-MiniLM-L6-v2 model (loaded once for the module), and model changes."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from memory import embeddings
from memory.chunks import embed_pending_chunks, pending_count
from memory.models import MemoryChunk
from memory.search import SearchRequest, search_memory
from tests.factories import make_experiment, make_token
from tests.memory.conftest import seed_memory

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def model() -> object:
    # Model load takes seconds: once per module; every test below reuses the process-wide instance.
    return embeddings._load()


def test_query_without_shared_words_ranks_the_blackboard_memory_first(model, client, experiment) -> None:
    seed_memory(experiment)
    call_command("awp_embed", "--experiment", experiment.slug)
    assert pending_count(experiment=experiment) == 0
    token = make_token(experiment, ["memory:read"])
    response = client.post(
        f"/api/v1/experiments/{experiment.slug}/memory/search",
        json.dumps({"query": "how do workers coordinate", "mode": "semantic", "max_results": 10}),
        content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}",
    )  # fmt: skip
    results = response.json()["data"]["results"]
    assert "blackboard" in results[0]["content"]
    assert all(0 <= r["score"] <= 1 for r in results)
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    unrelated = next(r for r in results if "potassium" in r["content"])
    assert results[0]["score"] > unrelated["score"]


def test_semantic_search_stays_inside_the_experiment(model, experiment) -> None:
    seed_memory(experiment)
    other = make_experiment()
    seed_memory(other)
    MemoryChunk.objects.filter(experiment=other, tier="long_term").update(content="Workers coordinate through a board.")
    embed_pending_chunks()
    hits = search_memory(experiment, SearchRequest(query="how do workers coordinate", mode="semantic", max_results=50))
    own = set(MemoryChunk.objects.filter(experiment=experiment).values_list("pk", flat=True))
    assert hits.hits and {hit.chunk_id for hit in hits.hits} <= own


def test_a_model_change_re_embeds_and_never_mixes_vector_spaces(model, experiment) -> None:
    seed_memory(experiment)
    embed_pending_chunks(experiment=experiment)
    total = MemoryChunk.objects.filter(experiment=experiment).count()
    # Pretend half of the vectors came from another model: search must ignore them until re-embedded.
    half = list(MemoryChunk.objects.filter(experiment=experiment).values_list("pk", flat=True))[: total // 2]
    MemoryChunk.objects.filter(pk__in=half).update(model_name="some-other-model")
    hits = search_memory(experiment, SearchRequest(query="workers", mode="semantic", max_results=50)).hits
    assert not {hit.chunk_id for hit in hits} & set(half)
    assert pending_count(experiment=experiment) == len(half)
    assert embed_pending_chunks(experiment=experiment) == len(half)
    assert set(MemoryChunk.objects.filter(experiment=experiment).values_list("model_name", flat=True)) == {
        embeddings.current_model_name()
    }


def test_awp_embed_with_the_embedder_off_exits_cleanly(experiment, settings, capsys) -> None:
    settings.AWP_EMBEDDER = "none"
    seed_memory(experiment)
    call_command("awp_embed", "--all")
    assert "disabled" in capsys.readouterr().out
    assert pending_count(experiment=experiment) > 0


def test_recall_relevance_is_semantic_for_whole_episodes_only(model) -> None:
    from experiments.ingest import EventIn, append_events
    from experiments.protocol import parse_protocol
    from memory.episodes import recall_for
    from tests.factories import make_run

    protocol = "state:\n  sharing:\n    strategy: selective\n    rules:\n      - {from: researcher, to: [writer], fields: [findings]}\n"
    experiment = make_experiment(protocol_yaml=protocol, protocol=parse_protocol(protocol))
    append_events(make_run(experiment), [
        EventIn("worker.complete", "key:w", {"summary": "Bananas and mangoes are tropical."}, agent_id="writer", iteration=1),
        EventIn("worker.complete", "key:r", {"summary": "Apples and pears grow in orchards.", "findings": ["cheese"]},
                agent_id="researcher", iteration=1),
    ])  # fmt: skip
    keyword_only = recall_for(experiment=experiment, agent_id="writer", query="fruit", top_k=10)
    assert {s.relevance for s in keyword_only.items} == {0.0}  # nothing embedded yet: keyword, no shared word
    call_command("awp_embed", "--experiment", experiment.slug)
    block = recall_for(experiment=experiment, agent_id="writer", query="fruit", top_k=10)
    by_agent = {s.episode.agent_id: s for s in block.items}
    assert by_agent["writer"].relevance > 0.2  # semantic: the whole own episode is about fruit
    # The researcher's summary (about fruit) is hidden from the writer: its relevance must not reveal it.
    assert by_agent["researcher"].content == 'findings: ["cheese"]' and by_agent["researcher"].relevance == 0.0
