"""Forms for experiments: create, and the Protocol tab (with YAML validated to the line)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.text import slugify

from experiments.models import Experiment
from experiments.protocol import ProtocolError, parse_protocol


class TagsField(forms.CharField):
    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        text = super().to_python(value) or ""
        return sorted({tag.strip() for tag in text.split(",") if tag.strip()})

    def prepare_value(self, value: Any) -> str:
        return ", ".join(value) if isinstance(value, list) else (value or "")

class ExperimentCreateForm(forms.ModelForm):
    class Meta:
        model = Experiment
        fields = ["name", "goal"]
        widgets = {"goal": forms.Textarea(attrs={"rows": 2})}

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        slug = slugify(name)[:80]
        if not slug:
            raise forms.ValidationError("Use at least one letter or digit in the name.")
        if Experiment.objects.filter(slug=slug).exists():
            raise forms.ValidationError(f"An experiment with the address '{slug}' exists already.")
        return name

class ProtocolForm(forms.ModelForm):
    tags = TagsField(required=False, help_text="comma separated")

    class Meta:
        model = Experiment
        fields = ["goal", "hypothesis", "description", "tags", "status", "protocol_yaml", "review_quorum"]
        widgets = {
            "goal": forms.Textarea(attrs={"rows": 2}),
            "hypothesis": forms.Textarea(attrs={"rows": 2}),
            "description": forms.Textarea(attrs={"rows": 4}),
            "protocol_yaml": forms.Textarea(attrs={"rows": 16, "spellcheck": "false", "class": "code"}),
        }
        labels = {"protocol_yaml": "Protocol (workflow.awp.yaml)"}

    def clean_protocol_yaml(self) -> str:
        text = self.cleaned_data["protocol_yaml"]
        try:
            self.parsed_protocol = parse_protocol(text)
        except ProtocolError as exc:
            raise forms.ValidationError(str(exc)) from None
        return text

    def save(self, commit: bool = True) -> Experiment:
        self.instance.protocol = getattr(self, "parsed_protocol", self.instance.protocol)
        return super().save(commit=commit)

