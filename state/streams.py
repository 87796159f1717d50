"""Known-secret masking of a stream, chunk by chunk (pure): the same output as masking the whole text at once.

A streamed answer (an export, any StreamingHttpResponse) never exists as one text, so the net masks it as it
passes. A secret can be split across two chunks, so the tail of each chunk that could still be the start of a
secret (`reach - 1` characters, `reach` being the longest form a secret takes) is carried over to the next one.
Masking replaces each maximal run of characters covered by known secrets with one REDACTED, so what a chunk
emits only depends on what is known about its characters: occurrences that start before the cut are complete
inside the buffer, and one that started there and runs past the cut is remembered as `covered`.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import AsyncIterator, Iterable, Iterator

from state.redaction import REDACTED, KnownSecrets, escaped_forms, merge_spans


def _reach(known: KnownSecrets) -> int:
    """The longest text a known secret covers in this matcher (escaped forms included when it matches them)."""
    if not known:
        return 0
    if known.escaped:
        return max(len(form) for value in known.values for form in escaped_forms(value))
    return max(len(value) for value in known.values)


class StreamMask:
    """Feed text pieces, get their masked text; `flush` at the end. Concatenated, it equals `known.mask(text)`."""

    def __init__(self, known: KnownSecrets) -> None:
        self.known = known
        self.reach = _reach(known)
        # The trie-regex fallback finds non-overlapping matches (a scan resumes where a match ended); the
        # automaton finds every occurrence. The carry-over reproduces each one's scan exactly.
        self._overlapping = not isinstance(getattr(known, "_matcher", None), re.Pattern)
        self._carry = ""
        self._covered = 0  # characters at the start of the carry already inside an earlier occurrence
        self._in_run = False  # the output so far ends with a REDACTED whose run may go on

    def feed(self, text: str) -> str:
        """The masked text that is final once `text` is appended (a tail that may start a secret waits)."""
        if not self.known:
            return text
        buffer = self._carry + text
        cut = len(buffer) - (self.reach - 1)
        if cut <= 0:
            self._carry = buffer
            return ""
        return self._emit(buffer, cut)

    def flush(self) -> str:
        """What is left at the end of the stream, masked."""
        if not self.known or not self._carry:
            return ""
        return self._emit(self._carry, len(self._carry))

    def _emit(self, buffer: str, cut: int) -> str:
        start = 0 if self._overlapping else self._covered
        found = [(start + s, start + e) for s, e in self.known.spans(buffer[start:]) if start + s < cut]
        if self._covered:
            found.append((0, self._covered))
        pieces: list[str] = []
        pos, in_run, reach_end = 0, self._in_run, 0
        for s, e in merge_spans(found):
            if s > pos:
                pieces.append(buffer[pos:s])
                in_run = False
            if not in_run:
                pieces.append(REDACTED)
                in_run = True
            pos = max(pos, min(e, cut))
            reach_end = max(reach_end, e)
        if pos < cut:
            pieces.append(buffer[pos:cut])
            in_run = False
        self._carry = buffer[cut:]
        self._covered = max(0, reach_end - cut)
        self._in_run = in_run
        return "".join(pieces)


class _ChunkMasker:
    """Bytes in, masked bytes out, for one stream: a character split between chunks is decoded whole."""

    def __init__(self, known: KnownSecrets, charset: str) -> None:
        self.charset = charset
        self.mask, self.decoder = StreamMask(known), codecs.getincrementaldecoder(charset)(errors="surrogateescape")

    def piece(self, chunk: bytes | str) -> bytes:
        raw = chunk.encode(self.charset, errors="surrogateescape") if isinstance(chunk, str) else bytes(chunk)
        return self.mask.feed(self.decoder.decode(raw)).encode(self.charset, errors="surrogateescape")

    def tail(self) -> bytes:
        text = self.mask.feed(self.decoder.decode(b"", final=True)) + self.mask.flush()
        return text.encode(self.charset, errors="surrogateescape")


def mask_chunks(chunks: Iterable[bytes | str], known: KnownSecrets, charset: str = "utf-8") -> Iterator[bytes]:
    """A byte stream masked chunk by chunk (a character split between chunks is decoded whole)."""
    masker = _ChunkMasker(known, charset)
    for chunk in chunks:
        if out := masker.piece(chunk):
            yield out
    if tail := masker.tail():
        yield tail


async def amask_chunks(chunks: AsyncIterator[bytes | str], known: KnownSecrets, charset: str = "utf-8") -> AsyncIterator[bytes]:
    """`mask_chunks` for an async stream (daphne sends each masked piece as it is ready)."""
    masker = _ChunkMasker(known, charset)
    async for chunk in chunks:
        if out := masker.piece(chunk):
            yield out
    if tail := masker.tail():
        yield tail
