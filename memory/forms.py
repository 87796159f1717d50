"""Forms of the Memory tab."""

from __future__ import annotations

from django import forms

from memory.models import Note
from memory.search import MODES, SEARCH_TIERS


class LongTermEditForm(forms.Form):
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 22, "class": "mono"}), required=False, max_length=500_000)
    reason = forms.CharField(max_length=500, help_text="why this change (kept in the history)")
    base_version = forms.IntegerField(widget=forms.HiddenInput, min_value=0)


class NoteForm(forms.ModelForm):
    class Meta:
        model = Note
        fields = ["kind", "content"]
        widgets = {"content": forms.Textarea(attrs={"rows": 3})}


class SearchForm(forms.Form):
    q = forms.CharField(
        required=False, max_length=1000, label="Query",
        widget=forms.TextInput(attrs={"placeholder": "Search memory…", "aria-label": "Search memory", "type": "search"}),
    )  # fmt: skip
    mode = forms.ChoiceField(choices=[(m, m.replace("_", " ")) for m in MODES], initial="keyword")
    tiers = forms.MultipleChoiceField(
        choices=[(t, t.replace("_", " ")) for t in SEARCH_TIERS], required=False, widget=forms.CheckboxSelectMultiple
    )
    start = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    agents = forms.CharField(required=False, max_length=1000, label="Agents", help_text="comma-separated agent ids")
    max_results = forms.IntegerField(min_value=1, max_value=100, initial=20, required=False)


class RecallForm(forms.Form):
    agent = forms.ChoiceField(label="Agent", required=False)
    q = forms.CharField(
        required=False, max_length=2000, label="Query",
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "what the agent is thinking about (optional)"}),
    )  # fmt: skip
    turn = forms.IntegerField(required=False, min_value=0, max_value=2**31 - 1, label="At turn", help_text="on the experiment's turn clock; empty: now")
    top_k = forms.IntegerField(required=False, min_value=1, max_value=100, label="Top k", help_text="empty: the protocol's top_k")

    def __init__(self, *args: object, agents: list[str], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["agent"].choices = [(a, a) for a in agents]
        if agents and not self.is_bound:
            self.initial["agent"] = agents[0]
