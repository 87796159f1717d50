"""Declared secrets: values the owner of a run says are secret, learnt before any text that may hold them.

The detector finds credentials by their shape and their context; a secret in a shape it has never seen (a
passphrase, a short password, a vendor's new token) passes it. The runtime itself knows its secrets: AWP's loader
(`awp.runtime.secrets.load_secrets`) reads them from the workflow folder's `secrets.yaml` and `.env`. So a value
declared there, pushed to `POST /api/v1/secrets` or pasted on the Connect page becomes a known secret of the
experiment, and value masking removes it from every way out whatever its shape.

- `secrets.yaml` is the runtime's explicit store: every value under `secrets:` is declared (a `{{ env.NAME }}`
  template is resolved from this process's environment, as the runtime resolves it from its own; unresolved, it
  names no value we can know).
- `.env` also holds settings (`MODEL=gpt-4o-mini`, `REGION=eu-west-1`): a value is declared when its name is a
  sensitive name (`OPENAI_API_KEY`, `DB_PASSWORD`) or the detector finds it in the file's text.

Values are never echoed: answers and problems give counts, names and line numbers only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from state.detection import detect_secrets
from state.secrets import learn_secrets
from state.sensitive import MAX_SECRET_LENGTH, MIN_SECRET_LENGTH, is_maskable, is_sensitive

SECRETS_YAML = "secrets.yaml"
DOTENV = ".env"
MAX_DECLARED = 1000  # values per declaration (a request or a pasted list)
_TEMPLATE = re.compile(r"\{\{\s*env\.(\w+)\s*\}\}")


@dataclass(frozen=True)
class Refusal:
    """Why one declared value cannot be masked by value: its index (or line) and a code, never the value."""

    index: int
    code: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "code": self.code, "message": self.message}


def refusal(index: int, value: Any) -> Refusal | None:
    """None when `value` can be masked wherever it appears; else why not."""
    if not isinstance(value, str):
        return Refusal(index, "invalid_value", "Each secret must be a string.")
    text = value.strip()
    if len(text) < MIN_SECRET_LENGTH:
        message = f"Values under {MIN_SECRET_LENGTH} characters are not masked by value (they would mask ordinary words); masking by key still applies."
        return Refusal(index, "too_short", message)
    if len(text) > MAX_SECRET_LENGTH:
        return Refusal(index, "too_long", f"A secret holds at most {MAX_SECRET_LENGTH} characters.")
    if not is_maskable(text):
        return Refusal(index, "not_maskable", "A number, a path, a boolean or a masked value cannot be masked by value without masking ordinary text.")
    return None


def refusals(values: Sequence[Any], *, first: int = 0) -> list[Refusal]:
    """Why each value of a declaration that cannot be masked by value is refused, numbered from `first` (an API
    index from 0, a pasted line from 1); empty when every value can be declared."""
    return [refused for index, value in enumerate(values, start=first) if (refused := refusal(index, value)) is not None]


def declare(experiment_id: int, values: Iterable[str]) -> int:
    """Learn `values` (each already checked by `refusal`) as known secrets of the experiment; how many were new."""
    return learn_secrets(experiment_id=experiment_id, values=values)


@dataclass
class StoreReading:
    """What a workflow folder's secret store declares: the values, and each entry that cannot be masked by value
    (its file and name, never its value)."""

    values: list[str] = field(default_factory=list)
    unmaskable: list[tuple[str, str, str]] = field(default_factory=list)  # (file, name, refusal message)
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (file, why)


def read_store(folder: Path, sensitive: frozenset[str], *, environ: Mapping[str, str] | None = None) -> StoreReading:
    """The secrets the runtime would load from `folder` (secrets.yaml and .env), parsed as its loader parses them."""
    environ = os.environ if environ is None else environ
    reading = StoreReading()
    dotenv_path = folder / DOTENV
    if dotenv_path.is_file():
        text = _read(dotenv_path, reading)
        if text is not None:
            found = detect_secrets(text, sensitive)
            for name, value in _dotenv_entries(text):
                if value and (is_sensitive(name, sensitive) or value in found):
                    _keep(reading, DOTENV, name, value)
    yaml_path = folder / SECRETS_YAML
    if yaml_path.is_file():
        text = _read(yaml_path, reading)
        if text is not None:
            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" (line {mark.line + 1})" if mark is not None else ""
                reading.unreadable.append((SECRETS_YAML, f"not valid YAML{where}"))
                data = None
            entries = data.get("secrets") if isinstance(data, dict) else None
            if isinstance(entries, dict):
                for name, raw in entries.items():
                    resolved = _resolved(str(raw), environ) if raw is not None else None
                    if resolved:
                        _keep(reading, SECRETS_YAML, str(name), resolved)
            elif data is not None:
                reading.unreadable.append((SECRETS_YAML, "no `secrets:` mapping (the runtime skips it too)"))
    return reading


def _read(path: Path, reading: StoreReading) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reading.unreadable.append((path.name, type(exc).__name__))
        return None


def _keep(reading: StoreReading, file: str, name: str, value: str) -> None:
    refused = refusal(0, value)
    if refused is None:
        reading.values.append(value.strip())
    else:
        reading.unmaskable.append((file, name, refused.message))


def _dotenv_entries(text: str) -> list[tuple[str, str]]:
    """KEY=VALUE lines as the runtime's loader reads them: comments and blank lines skipped, quotes stripped."""
    entries = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or "=" not in stripped:
            continue
        key, _, value = stripped.partition("=")
        key = key.strip()
        if key:
            entries.append((key, value.strip().strip("'\"")))
    return entries


def _resolved(value: str, environ: Mapping[str, str]) -> str | None:
    """A secrets.yaml value with its `{{ env.NAME }}` templates filled in; None when one names no variable here."""
    missing = False

    def fill(match: re.Match[str]) -> str:
        nonlocal missing
        name = match.group(1)
        if name not in environ:
            missing = True
            return ""
        return environ[name]

    resolved = _TEMPLATE.sub(fill, value)
    return None if missing else resolved


class StoreWatch:
    """Learns each workflow folder's secret store once per version of its files (a watcher passes many times a
    second; the files change rarely). Keyed by experiment and file identity (inode, size, mtime)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[int, str], tuple[tuple[int, int, int] | None, ...]] = {}

    def learn(self, experiment: Any, folder: Path) -> StoreReading | None:
        """The folder's reading when its store changed since the last call (its values learnt), else None."""
        from state.services_redaction import sensitive_fields_for

        signature = tuple(_identity(folder / name) for name in (DOTENV, SECRETS_YAML))
        key = (experiment.pk, str(folder))
        if self._seen.get(key) == signature:
            return None
        reading = read_store(folder, sensitive_fields_for(experiment))
        declare(experiment.pk, reading.values)
        self._seen[key] = signature
        return reading


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns)
