"""An event never hides what its strings hold read alone (round 16, by construction): whatever the detector finds
in a text alone it also finds in that text carried by an event (a shell tool call's command, a log's message, a
result nested in a list), and the event's gate opens for it. Over every part of the corpus that is not blind, and
over generated texts.

A string inside the serialized event reads otherwise (a line's start is `\\n` or a quote, a quoted value `\\"…\\"`): in
round 16's blind part 6 of 896 such readings missed a value found alone, and HOLDOUT12's Z-Wave `securityKeys` map was
found alone but never scanned in an event (its gate did not open).
"""

from __future__ import annotations

import pytest
from django.conf import settings
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from state.detection import detect_secrets
from state.redaction import sensitive_set
from state.secrets import event_may_hold_secrets, event_secrets
from tests.corpus.secrets.holdout import generate as holdout
from tests.corpus.secrets.holdout12 import generate as holdout12
from tests.corpus.secrets.holdout13 import generate as holdout13
from tests.corpus.secrets.holdout14 import generate as holdout14
from tests.corpus.secrets.holdout15 import generate as holdout15
from tests.corpus.secrets.tune import generate as tune

SENSITIVE = sensitive_set(settings.AWP_SENSITIVE_FIELDS)
PARTS = {"tune": tune.documents(), "holdout": holdout.documents(), "holdout12": holdout12.documents(),
         "holdout13": holdout13.documents(), "holdout14": holdout14.documents(), "holdout15": holdout15.documents()}  # fmt: skip


def carried(text: str) -> list[tuple[str, dict]]:
    """The text as events carry it."""
    return [
        ("tool.call", {"tool": "shell", "args": {"command": text}}),
        ("log", {"msg": text}),
        ("worker.complete", {"results": [{"output": text, "ok": True}]}),
    ]


@pytest.mark.parametrize("part", sorted(PARTS))
def test_what_a_document_holds_alone_an_event_carrying_it_holds(part):
    missed = []
    for doc in PARTS[part]:
        alone = detect_secrets(doc.text, SENSITIVE)
        if not alone:
            continue
        for kind, payload in carried(doc.text):
            if not event_may_hold_secrets(kind, "", payload, SENSITIVE) or not alone <= event_secrets(kind, "", payload, SENSITIVE):
                missed.append((doc.shape, kind))
    assert missed == []


lines = st.lists(
    st.one_of(
        st.sampled_from(["", "  ", "---", "$ deploy --prod", "{", "}", "\t# notes", '"quoted"', "ok \\ done"]),
        st.builds(lambda name, value: f"{name}: {value}", st.sampled_from(["password", "api_key", "token", "db_pass", "note"]),
                  st.sampled_from(["Hx7#pQ2vLm9zR4", "sk-live-9f8e7d6c5b4a39281706", "hunter2-swordfish", "not-a-secret"])),
        st.builds(lambda value: f'export SECRET_TOKEN="{value}"', st.sampled_from(["Zq8vN3xT5pL2wR7k", "changeme"])),
        st.builds(lambda value: f'  "securityKeys": {{"S0": "{value}"}}', st.sampled_from(["0A1B2C3D4E5F60718293A4B5C6D7E8F9"])),
    ),
    min_size=1,
    max_size=8,
)  # fmt: skip


@hypothesis_settings(max_examples=150, deadline=None)
@given(lines)
def test_generated_texts_read_the_same_alone_and_in_events(text_lines):
    text = "\n".join(text_lines)
    alone = detect_secrets(text, SENSITIVE)
    for kind, payload in carried(text):
        assert alone <= event_secrets(kind, "", payload, SENSITIVE), (kind, text)
        if alone:
            assert event_may_hold_secrets(kind, "", payload, SENSITIVE), (kind, text)


@pytest.mark.parametrize("part", sorted(PARTS))
def test_the_event_gate_opens_wherever_the_serialized_event_alone_opened_it(part):
    """One pass over the serialized event and its strings together: never narrower than the serialized event's own."""
    from state.secrets import _event_text, _gate

    narrower = []
    for doc in PARTS[part]:
        for kind, payload in carried(doc.text):
            if _gate(_event_text(kind, "", payload, None), SENSITIVE) is not None and not event_may_hold_secrets(kind, "", payload, SENSITIVE):
                narrower.append((doc.shape, kind))
    assert narrower == []
