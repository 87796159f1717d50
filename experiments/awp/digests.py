"""Digest SHAs exactly as the AWP runtime computes them."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def digest_sha(record: dict[str, Any]) -> str:
    """sha256 of the record as json.dumps(sort_keys=True, ensure_ascii=False) with default separators."""
    # The runtime hashes with Python's default separators (", " and ": "); compact JSON gives other SHAs.
    text = json.dumps(record, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_digest(record: Any, claimed_sha: str | None) -> tuple[str, str | None]:
    """Return (recomputed sha, error sentence or None) for a digest record claimed to have `claimed_sha`."""
    if not isinstance(record, dict):
        return "", "A digest record must be a JSON object."
    sha = digest_sha(record)
    if claimed_sha and claimed_sha != sha:
        return sha, f"Digest content hashes to {sha[:12]}…, not {claimed_sha[:12]}… as its name claims."
    return sha, None
