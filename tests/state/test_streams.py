"""The stream net (state.streams): any chunking of any text masks exactly as the whole text at once."""

from __future__ import annotations

import asyncio
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from state.redaction import KnownSecrets, _trie_regex, escaped_forms
from state.streams import StreamMask, amask_chunks, mask_chunks

SECRETS = ["sk-live-Ab12Cd34", "p@ss w0rd&<x>", "abcabcabc", "abcabcabcX", "\u00e9t\u00e9-secret-\u2603", "s3cr3t"]
ALPHABET = "abcX s-k3<>&\"'%+ \u00e9\u2603\n"


def regex_matcher(values: list[str], escaped: bool) -> KnownSecrets:
    """The trie-regex fallback (non-overlapping matches) with the same values."""
    forms = set().union(*(escaped_forms(v) for v in values)) if escaped else set(values)
    return KnownSecrets(frozenset(values), escaped, re.compile(_trie_regex(frozenset(forms))))


@st.composite
def planted(draw: st.DrawFn) -> tuple[str, list[int]]:
    """A text of noise with known secrets (raw or in an escaped form) planted anywhere, and cut points."""
    parts = []
    for _ in range(draw(st.integers(0, 8))):
        parts.append(draw(st.text(ALPHABET, max_size=12)))
        secret = draw(st.sampled_from(SECRETS))
        parts.append(draw(st.sampled_from(sorted(escaped_forms(secret)))))
    parts.append(draw(st.text(ALPHABET, max_size=12)))
    text = "".join(parts)
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=12)))
    return text, cuts


def chunked(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


@settings(max_examples=400, deadline=None)
@given(planted(), st.booleans(), st.booleans())
def test_any_chunking_masks_as_the_whole_text(case: tuple[str, list[int]], escaped: bool, regex: bool) -> None:
    text, cuts = case
    known = regex_matcher(SECRETS, escaped) if regex else KnownSecrets.of(SECRETS, escaped=escaped)
    mask = StreamMask(known)
    out = "".join(mask.feed(piece) for piece in chunked(text, cuts)) + mask.flush()
    assert out == known.mask(text)


@settings(max_examples=200, deadline=None)
@given(planted())
def test_bytes_split_inside_a_character_or_a_secret_are_masked(case: tuple[str, list[int]]) -> None:
    text, _ = case
    data = text.encode()
    cuts = list(range(0, len(data), 3))
    pieces = [data[a : a + 3] for a in cuts]
    known = KnownSecrets.of(SECRETS, escaped=True)
    assert b"".join(mask_chunks(pieces, known)).decode() == known.mask(text)

    async def collect() -> bytes:
        async def source():  # type: ignore[no-untyped-def]
            for piece in pieces:
                yield piece

        return b"".join([chunk async for chunk in amask_chunks(source(), known)])

    assert asyncio.run(collect()).decode() == known.mask(text)


def test_a_secret_split_across_two_chunks_never_leaves() -> None:
    known = KnownSecrets.of(["sk-live-Ab12Cd34"], escaped=True)
    out = b"".join(mask_chunks([b'{"kind": "sk-live-Ab', b'12Cd34", "n": 1}'], known))
    assert out == b'{"kind": "[redacted]", "n": 1}'


def test_no_known_secret_passes_every_chunk_as_it_is() -> None:
    mask = StreamMask(KnownSecrets.empty())
    assert [mask.feed(p) for p in ("a", "b")] == ["a", "b"] and mask.flush() == ""
