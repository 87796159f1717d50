"""Run pages and the Runs tab: real imported data, filters, htmx partials, redaction, permissions."""

from __future__ import annotations

import pytest
from django.test import Client

from experiments.importer import FolderImporter
from experiments.ingest import EventIn, append_events
from experiments.models import IngestProblem, Run
from tests.experiments.awp_trees import RUN_ID, make_workflow
from tests.factories import make_member, make_run, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def imported(tmp_path, experiment):  # type: ignore[no-untyped-def]
    root = make_workflow(tmp_path / "wf")
    (root / "workspace" / "runs" / RUN_ID / "iterations" / "001" / "validation.json").write_text("{broken")
    FolderImporter(root, experiment_slug=experiment.slug).sync()
    return Run.objects.get(experiment=experiment, run_id=RUN_ID)


def page(client: Client, run: Run, tab: str = "", **params: str) -> str:
    url = run.get_absolute_url() + (f"{tab}/" if tab else "")
    response = client.get(url, params)
    assert response.status_code == 200
    return response.content.decode()


def test_run_tabs_show_the_imported_run_redacted(imported, viewer):
    client = Client()
    client.force_login(viewer)
    timeline = page(client, imported)
    assert 'id="event-1"' in timeline and 'data-last-seq="' in timeline and "sk-SECRET" not in timeline
    assert 'id="run-header"' in timeline and "budget" in timeline.lower()
    only_board = page(client, imported, kind="board.post")
    assert "board.post" in only_board and "<code>run.start</code>" not in only_board
    iterations = page(client, imported, "iterations")
    assert "Iteration 2" in iterations and "fact_collector" in iterations and "sk-SECRET" not in iterations
    board = page(client, imported, "board")
    assert board.count('<tr id="board-') == 3
    digests = page(client, imported, "digests")
    assert "<svg" in digests and "digest-list" in digests
    problems = page(client, imported, "problems")
    assert "invalid_json" in problems and IngestProblem.objects.filter(run=imported).count() == 1


def test_htmx_tab_switch_renders_only_the_tab(imported, viewer):
    client = Client()
    client.force_login(viewer)
    response = client.get(imported.get_absolute_url() + "board/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="run-tab")
    body = response.content.decode()
    assert 'id="board-rows"' in body and "<html" not in body


def test_timeline_pages_through_many_events(experiment, viewer):
    run = make_run(experiment)
    append_events(run, [EventIn(kind="log", dedupe_key=f"k{i}", payload={"msg": i}) for i in range(450)])
    client = Client()
    client.force_login(viewer)
    first = page(client, run)
    assert first.count('id="event-') == 200 and "after=200" in first
    last = page(client, run, after="400")
    assert last.count('id="event-') == 50 and 'id="event-450"' in last


def test_a_page_the_head_has_passed_is_rendered_once_and_kept_until_a_secret_is_learnt(experiment, viewer):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from experiments import ledger_cache
    from state.secrets import learn_secrets

    ledger_cache.clear()
    run = make_run(experiment)
    # A kind that is a credential nobody has learnt yet: the row's CSS class slugifies it (lower-cased, past the net).
    hidden = "Zq7HiddenKindValue99"
    append_events(run, [EventIn(kind=hidden if i == 3 else "log", dedupe_key=f"k{i}", payload={"msg": i}) for i in range(450)])
    client = Client()
    client.force_login(viewer)
    with CaptureQueriesContext(connection) as cold:
        first = page(client, run)
    with CaptureQueriesContext(connection) as warm:
        again = page(client, run)
    rows = [body.split('id="timeline-rows"')[1].split("</tbody>")[0] for body in (first, again)]
    assert rows[0] == rows[1] and first.count('id="event-') == 200 and "after=200" in first
    assert f"kind-{hidden.lower()}" in first
    read_events = [q["sql"] for q in warm.captured_queries if '"experiments_event"."payload"' in q["sql"]]
    assert len(warm.captured_queries) < len(cold.captured_queries) and not read_events, read_events
    learn_secrets(experiment_id=experiment.pk, values=[hidden])
    masked = page(client, run)
    assert hidden.lower() not in masked.lower() and masked.count('id="event-') == 200
    # A page whose range the head has not passed is read each time (its rows may still grow).
    tail = page(client, run, after="400")
    assert tail.count('id="event-') == 50


def test_timeline_pages_read_the_general_way_when_seqs_have_a_gap(experiment, viewer):
    # Ingest never leaves a gap (an unfiltered page reads its seq range); rows written around it still page.
    from experiments.models import Event

    run = make_run(experiment, last_seq=300)
    Event.objects.bulk_create([Event(run=run, seq=seq, kind="log", payload={"msg": seq}, dedupe_key=f"k{seq}") for seq in [*range(1, 100), *range(150, 301)]])
    client = Client()
    client.force_login(viewer)
    first = page(client, run)
    assert first.count('id="event-') == 200 and 'id="event-250"' in first and "after=250" in first
    rest = page(client, run, after="250")
    assert rest.count('id="event-') == 50 and 'id="event-300"' in rest and "Next events" not in rest


def test_timeline_rows_escape_what_the_agent_wrote_on_the_page_and_in_live_frames(experiment, viewer):
    from awp_site.live import Viewer, render_run_fragments

    run = make_run(experiment)
    markup = '<img src=x onerror="alert(1)">'
    append_events(run, [EventIn(kind="log", dedupe_key="x", agent_id='w"><b>', payload={"msg": markup, "note": "a & b"})])
    client = Client()
    client.force_login(viewer)
    frame = "".join(render_run_fragments(run, list(run.events.all()), Viewer(viewer, "viewer")))
    for html in (page(client, run), frame):
        assert "<img" not in html and "<b>" not in html
        assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html  # the one-line summary
        assert "<td>w&quot;&gt;&lt;b&gt;</td>" in html and "a &amp; b" in html


def test_runs_tab_nests_submanagers_and_filters_by_status(experiment, viewer):
    root = make_run(experiment, status="complete")
    make_run(experiment, parent=root, depth=1, parent_worker="sub_research", status="partial")
    client = Client()
    client.force_login(viewer)
    body = client.get(f"/experiments/{experiment.slug}/runs/").content.decode()
    assert body.index(f"run-row-{root.pk}") < body.index("sub_research") and "depth-1" in body
    partial = client.get(f"/experiments/{experiment.slug}/runs/", {"status": "partial"}).content.decode()
    assert "sub_research" in partial and f"run-row-{root.pk}" not in partial


def test_non_members_get_404(imported):
    client = Client()
    client.force_login(make_user())
    assert client.get(imported.get_absolute_url()).status_code == 404
    assert client.get(imported.get_absolute_url() + "digests/").status_code == 404
    make_member(imported.experiment, "viewer")


def test_live_fragments_render_new_rows_header_and_run_rows(imported, viewer):
    from awp_site.live import Viewer, render_experiment_fragments, render_run_fragments

    events = list(imported.events.order_by("seq"))
    html = "".join(render_run_fragments(imported, events, Viewer(viewer, "viewer")))
    assert 'hx-swap-oob="beforeend:#timeline-rows"' in html and f'id="event-{events[-1].seq}"' in html
    assert 'id="run-header" hx-swap-oob="true"' in html and 'beforeend:#board-rows' in html and "beforeend:#digest-list" in html
    assert "sk-SECRET" not in html
    rows = "".join(render_experiment_fragments(imported.experiment, Viewer(viewer, "viewer"), [imported.pk]))
    assert f'id="run-row-{imported.pk}"' in rows and f'<tbody hx-swap-oob="afterbegin:#experiment-rows" data-live-upsert><tr id="experiment-row-{imported.experiment.pk}">' in rows


def test_admin_rebuilds_projections_from_the_ledger(imported):
    from experiments.models import BoardPost, Digest

    admin = make_user(is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(admin)
    BoardPost.objects.filter(run=imported).delete()
    response = client.post("/admin/experiments/run/", {"action": "rebuild_projections", "_selected_action": [imported.pk]}, follow=True)
    assert response.status_code == 200
    assert BoardPost.objects.filter(run=imported).count() == 3 and Digest.objects.filter(run=imported).count() == 2
    imported.refresh_from_db()
    assert imported.status == "complete" and imported.iterations == 2
    assert client.get("/admin/experiments/ingestproblem/").status_code == 200
