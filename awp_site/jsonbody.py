"""The one JSON reader for API request bodies: what it returns Postgres and every later step can hold.

Every API body (ninja's parser, the memory tool endpoints, pool envelopes) is read here, whatever its
Content-Type says, and refused with a code naming the problem (and, where there is one, the field):

- not JSON / not UTF-8 → 400 `invalid_json`; a lone surrogate → 400 `invalid_unicode`;
- nested deeper than MAX_DEPTH → 400 `json_too_deep` (recursive steps after the parser stay far from
  Python's recursion limit);
- NaN / Infinity (and numbers too large for a double) → 422 `non_finite_number` with the field: they are not
  JSON, and jsonb cannot store them (they used to be stored as null); integers up to ±1.8e308 become floats
  past 64 bits (orjson), as JavaScript would read them;
- U+0000 in any key or string → 400 `json_nul_character` (Postgres text cannot hold it).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import orjson
import simdjson

from awp_site.apierrors import ApiError
from experiments.jsonb import MAX_DEPTH, nests_deeper_than

T = TypeVar("T")



class _NonFinite:
    """Stands for a NaN / Infinity literal while its path is looked for."""


_NON_FINITE = _NonFinite()


def request_json(request: Any) -> Any:
    """parse_json_body of a request's body, read once per request: a path that looks at the body before the
    API's parser (the one-statement push) leaves the value, or the refusal, for the parser to take."""
    cached = request.__dict__.get("_awp_json")
    if cached is None:
        try:
            cached = (parse_json_body(request.body), None)
        except ApiError as refused:
            cached = (None, refused)
        request.__dict__["_awp_json"] = cached
    value, refused = cached
    if refused is not None:
        raise refused
    return value


def parse_json_body(body: bytes) -> Any:
    """The JSON value of a request body, or an ApiError saying what is wrong with it."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise _refusal(body, str(exc)) from None
    if nests_deeper_than(value, MAX_DEPTH, containers=body.count(b"{") + body.count(b"[")):
        raise ApiError(400, "json_too_deep", f"The JSON body nests deeper than {MAX_DEPTH} levels.", field="body", max_depth=MAX_DEPTH)
    if b"\\u0000" in body:
        field = _path_where(value, lambda item: isinstance(item, str) and "\x00" in item)
        if field is not None:
            raise ApiError(400, "json_nul_character", f"JSON strings may not contain the NUL character (\\u0000): {field or 'body'}.", field=field)
    return value


def _refusal(body: bytes, reason: str) -> ApiError:
    """Why orjson refused a body, named as precisely as the standard library's second reading allows."""
    if "depth limit" in reason:
        return ApiError(400, "json_too_deep", f"The JSON body nests deeper than {MAX_DEPTH} levels.", field="body", max_depth=MAX_DEPTH)
    if "surrogate" in reason:
        return ApiError(400, "invalid_unicode", f"The body is not valid UTF-8 or holds a lone surrogate ({reason}).", field="body")
    try:
        lenient = json.loads(body, parse_constant=lambda _literal: _NON_FINITE)
    except RecursionError:
        return ApiError(400, "json_too_deep", f"The JSON body nests deeper than {MAX_DEPTH} levels.", field="body", max_depth=MAX_DEPTH)
    except (ValueError, UnicodeDecodeError):
        return ApiError(400, "invalid_json", f"The body is not JSON ({reason}).", field="body")
    non_finite = _path_where(lenient, _is_non_finite)
    if non_finite is not None or "infinity" in reason:
        field = non_finite or "body"
        message = f"{field}: NaN, Infinity and numbers beyond ±1.8e308 are not accepted; send a finite number or null."
        return ApiError(422, "non_finite_number", message, field=field)
    return ApiError(400, "invalid_json", f"The body is not JSON ({reason}).", field="body")


def _is_non_finite(item: Any) -> bool:
    if item is _NON_FINITE:
        return True
    if isinstance(item, float):
        return item != item or item in (float("inf"), float("-inf"))
    return isinstance(item, int) and not isinstance(item, bool) and abs(item) > 1.7976931348623157e308


def _path_where(value: Any, found: Any) -> str | None:
    """The dotted path (`events[0].payload.msg`) of the first key or value for which `found` holds."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if found(item):
            return _printable(path)
        if isinstance(item, dict):
            for key, child in item.items():
                child_path = f"{path}.{key}" if path else str(key)
                if found(key):
                    return _printable(child_path)
                stack.append((child, child_path))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(item))
    return None


def _printable(path: str) -> str:
    """A field path fit to be echoed in an answer (NUL spelled out, bounded)."""
    return path.replace("\x00", "\\u0000")[:200]


# ---- reading a body without building it ------------------------------------------------------------------

# What the depth count keeps of a body: the structure, the backslashes, and what a backslash may escape
# (`"\\/bfnrtu`, the letters and the slash mapped to one `e`, so an escape keeps its second character).
_ESCAPED = b"/bfnrtu"
_KEEP_ESCAPES = bytes(ord("e") if b in _ESCAPED else b for b in range(256))
_NOT_KEPT = bytes(b for b in range(256) if b not in b'"[]{}\\' + _ESCAPED)
_parsers = threading.local()


def read_unbuilt(body: bytes, read: Callable[[Any], T | None]) -> T | None:
    """`read(document)` of a body that passes every refusal of parse_json_body, read by simdjson without building
    the value; None when it needs the full reading (or `read` says so by returning None).

    simdjson refuses what is not well-formed UTF-8 JSON, NaN/Infinity, a lone surrogate and a number beyond 64
    bits; a NUL escape is declined; the depth is counted over the brackets outside strings (nesting_depth). About
    6× less than orjson plus the depth walk on a 5,000-event body. Whatever is declined goes the full way, which
    names the problem or takes the body as it is. `read` gets lazy proxies: none may outlive it.
    """
    if b"\\u0000" in body:
        return None
    # One parser per thread, reused (its buffers stay allocated) only once nothing of its last document is alive.
    parser = getattr(_parsers, "parser", None) or simdjson.Parser()
    _parsers.parser = None
    try:
        found = read(parser.parse(body))
    except (ValueError, RuntimeError, UnicodeDecodeError):
        return None
    _parsers.parser = parser  # every proxy into the document went with read's frame
    return found if found is not None and nesting_depth(body) <= MAX_DEPTH else None


def nesting_depth(body: bytes) -> int:
    """How deep arrays and objects nest in a well-formed JSON body: the brackets outside strings, counted in C
    (escaped quotes dropped, every byte but quotes and brackets deleted, then numpy's running sums)."""
    # In well-formed JSON a backslash only escapes, pairing from the left: drop the escaped backslashes, then the
    # escaped quotes; every quote left opens or closes a string. Done on what is kept of the body (a backslash is
    # followed there by what it escapes, as in the body): a quarter of a text's bytes, not all of them.
    kept = body.translate(_KEEP_ESCAPES, _NOT_KEPT).replace(b"\\\\", b"").replace(b'\\"', b"")
    marks = np.frombuffer(kept.translate(None, b"\\e"), np.uint8)
    outside = (np.cumsum(marks == 34, dtype=np.uint8) & 1) == 0  # parity survives the uint8 wrap
    step = (marks == 91).view(np.int8) + (marks == 123).view(np.int8) - (marks == 93).view(np.int8) - (marks == 125).view(np.int8)
    step *= outside
    return int(np.cumsum(step, dtype=np.int32).max(initial=0))
