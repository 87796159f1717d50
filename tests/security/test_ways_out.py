"""One way out (issue 23): known secrets used as an event kind, a metric name and an agent id never leave, neither
as they are nor as anything derived from them (a slug in a CSS class, a lower-cased id, an export row).

Each secret is learnt the ordinary way (an event carries it under a sensitive key), then used as a label.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client
from django.utils.text import slugify

from awp_site.live import Viewer, render_run_fragments
from experiments.ingest import EventIn, append_events
from experiments.models import Experiment, Run
from tests.factories import PASSWORD, make_experiment, make_member, make_run
from tests.security.crawl import body_of, crawl
from tests.security.surfaces import api_bodies

pytestmark = pytest.mark.django_db

KIND = "Kind-Zq81xQv7"
METRIC = "Metric-Hw27Lm"
AGENT = "Agent-Pp93Rt"
SECRETS = (KIND, METRIC, AGENT)


def forms_of(secret: str) -> set[str]:
    """The secret and what a template or presenter could derive from it."""
    return {secret, secret.lower(), secret.upper(), slugify(secret), secret.replace("-", "_").lower()}


def leaks(body: str) -> set[str]:
    return {form for secret in SECRETS for form in forms_of(secret) if form in body}


def planted_run(experiment: Experiment) -> Run:
    run = make_run(experiment)
    events = [
        # Learnt first, the ordinary way: each value under a sensitive key.
        EventIn(kind="log", dedupe_key="learn", payload={"msg": "keys", "api_key": KIND, "password": METRIC, "token": AGENT}),
        EventIn(kind=KIND, dedupe_key="k1", agent_id="researcher", iteration=1, payload={"summary": "a custom event"}),
        EventIn(kind="metric.quality", dedupe_key="m1", agent_id="researcher", iteration=1, payload={METRIC: 0.5, "loss": 0.25}),
        EventIn(kind="worker.spawn", dedupe_key="w0", agent_id=AGENT, iteration=1, payload={"worker_id": AGENT, "instructions": "go"}),
        EventIn(kind="worker.complete", dedupe_key="w1", agent_id=AGENT, iteration=1, payload={"worker_id": AGENT, "summary": "done", "confidence": 0.8}),
    ]
    append_events(run, events)
    run.refresh_from_db()
    return run


@pytest.fixture
def viewer_client() -> tuple[Client, Experiment, Run]:
    experiment = make_experiment()
    run = planted_run(experiment)
    user = make_member(experiment)
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client, experiment, run


@pytest.mark.parametrize("what", ["events", "metrics"])
@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_exports_hold_no_known_secret_used_as_a_kind_a_metric_or_an_agent(viewer_client, what: str, fmt: str) -> None:  # type: ignore[no-untyped-def]
    client, experiment, run = viewer_client
    response = client.get(f"/experiments/{experiment.slug}/runs/{run.pk}/export/{what}.{fmt}")
    assert response.status_code == 200 and response.streaming
    body = body_of(response).decode()
    assert not leaks(body), leaks(body)
    assert not leaks(response.get("Content-Disposition", ""))
    rows = list(csv.reader(io.StringIO(body))) if fmt == "csv" else json.loads(body)[what]
    assert rows, "the export has rows"  # the masked labels are there, the rest of the row too
    assert "[redacted]" in body


def test_a_run_id_that_is_a_known_secret_stays_out_of_the_export_file_name(viewer_client) -> None:  # type: ignore[no-untyped-def]
    client, experiment, run = viewer_client
    Run.objects.filter(pk=run.pk).update(run_id=f"run.{KIND}.v2")  # the file name turns "." into "_"
    response = client.get(f"/experiments/{experiment.slug}/runs/{run.pk}/export/events.json")
    assert response["Content-Disposition"] == 'attachment; filename="run__redacted__v2-events.json"'
    assert not leaks(body_of(response).decode())


def test_the_timeline_row_class_is_derived_from_the_masked_kind(viewer_client) -> None:  # type: ignore[no-untyped-def]
    client, experiment, run = viewer_client
    page = client.get(run.get_absolute_url()).content.decode()
    assert 'class="event kind-workercomplete"' in page  # rows still carry their kind class
    assert not leaks(page), leaks(page)
    fragment = client.get(run.get_absolute_url(), HTTP_HX_REQUEST="true").content.decode()
    assert not leaks(fragment), leaks(fragment)


def test_websocket_frames_carry_no_derived_label(viewer_client) -> None:  # type: ignore[no-untyped-def]
    _, experiment, run = viewer_client
    user = experiment.memberships.first().user
    frames = render_run_fragments(run, list(run.events.order_by("seq")), Viewer(user, "viewer"))
    assert frames and not leaks("".join(frames)), leaks("".join(frames))


def test_no_page_fragment_or_api_answer_shows_a_label_secret_or_a_slug_of_it(viewer_client) -> None:  # type: ignore[no-untyped-def]
    client, experiment, run = viewer_client
    seen = crawl(client, [experiment.get_absolute_url(), run.get_absolute_url()], max_pages=250)
    assert not seen.errors(), seen.errors()
    assert any("/export/" in url for url in seen.bodies), "the crawl reached the exports"
    bodies = {**seen.bodies, **api_bodies(client, experiment)}
    leaked = {url: leaks(body) for url, body in bodies.items() if leaks(body)}
    assert not leaked, leaked


@pytest.mark.parametrize("is_async", [False, True])
def test_any_streamed_answer_passes_the_net_with_a_secret_split_across_chunks(is_async: bool) -> None:
    from django.http import StreamingHttpResponse
    from django.test import RequestFactory

    from awp_site.middleware import RedactionNet
    from state.services_redaction import mark_in_scope

    experiment = make_experiment()
    planted_run(experiment)
    pieces = [b"<p>kind ", KIND[:5].encode(), KIND[5:].encode() + b" and ", json.dumps(AGENT).encode()[:4], json.dumps(AGENT).encode()[4:], b"</p>"]

    async def agen():  # type: ignore[no-untyped-def]
        for piece in pieces:
            yield piece

    def view(request):  # type: ignore[no-untyped-def]
        mark_in_scope(request, experiment)
        return StreamingHttpResponse(agen() if is_async else iter(pieces), content_type="application/octet-stream")

    response = RedactionNet(view)(RequestFactory().get("/any"))
    assert response.is_async is is_async
    body = body_of(response).decode()
    assert body == '<p>kind [redacted] and "[redacted]"</p>'
