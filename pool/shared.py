"""What an experiment receives from the pool: subscribed facts (newest version only), redacted for it.

Used by the prior-run block (memory/curation/prior.py), write-back (memory/curation/writeback.py) and
memory search tier `shared` (memory/search.py); nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection

from pool import rules
from pool.models import PoolFactVersion, PoolSubscription
from state.services_redaction import redact_text_for


@dataclass(frozen=True)
class SharedFact:
    fact_id: str
    version: int
    statement: str
    tags: tuple[str, ...]
    created_at: datetime

    @property
    def label(self) -> str:
        """How the fact is cited in a prompt or a facts file: `pool:<fact_id> v<version>`."""
        return f"pool:{self.fact_id} v{self.version}"


def subscription_of(experiment: Any) -> PoolSubscription | None:
    return PoolSubscription.objects.filter(experiment_id=experiment.pk).first()


def subscribed_facts(experiment: Any, *, limit: int = 200) -> list[SharedFact]:
    """Newest version of each pool fact the experiment subscribes to, newest first, redacted for it."""
    subscription = subscription_of(experiment)
    if subscription is None:
        return []
    newest = sorted(PoolFactVersion.objects.newest(), key=lambda f: (f.created_at, f.pk), reverse=True)
    taken = [f for f in newest if rules.matches_subscription(f.tags, all_facts=subscription.all_facts, tags=subscription.tags)]
    return [
        SharedFact(f.fact_id, f.version, redact_text_for(experiment, f.statement), tuple(f.tags), f.created_at)
        for f in taken[:limit]
    ]


def pool_statements(experiment: Any) -> set[str]:
    """Every statement any pool fact ever had, redacted for the experiment (write-back takes out those it no
    longer receives: older versions, facts outside its subscription, everything after unsubscribing)."""
    statements = PoolFactVersion.objects.values_list("statement", flat=True).distinct()
    return {redact_text_for(experiment, statement) for statement in statements[:5000]}


def search_shared(experiment: Any, query: str, limit: int) -> list[tuple[SharedFact, float]]:
    """Subscribed facts matching a keyword query (Postgres full text, then substring), with scores in [0, 1]."""
    facts = {f.fact_id: f for f in subscribed_facts(experiment)}
    if not facts or not query.strip():
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT ON (fact_id) fact_id, version, "
            "ts_rank_cd(to_tsvector('english', statement), websearch_to_tsquery('english', %s), 32), "
            "to_tsvector('english', statement) @@ websearch_to_tsquery('english', %s) OR statement ILIKE %s "
            "FROM pool_poolfactversion WHERE fact_id = ANY(%s) ORDER BY fact_id, version DESC",
            [query, query, "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%", list(facts)],
        )
        rows = cursor.fetchall()
    hits = [(facts[fact_id], max(float(rank), 0.5 if float(rank) == 0 else float(rank))) for fact_id, _v, rank, matched in rows if matched]
    return sorted(hits, key=lambda hit: (-hit[1], hit[0].fact_id))[:limit]
