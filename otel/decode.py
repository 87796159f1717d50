"""OTLP/HTTP trace export bodies → plain spans (no Django): both encodings, gzip, the JSON quirks the spec allows.

Parsing is `opentelemetry-proto`'s generated classes (binary) and protobuf's own JSON mapping (JSON); the
only work done here by hand is what OTLP/JSON changes from the proto3 JSON mapping: trace and span ids are
hex, not base64 (base64 is accepted too). Every span ends up as one `SpanIn`; a span that cannot be used
(an id of the wrong length, no name) is counted as rejected with a message, the others still go in.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import math
import zlib
from dataclasses import dataclass, field
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
TRACE_ID_BYTES, SPAN_ID_BYTES = 16, 8
STATUS_ERROR = 2  # Status.STATUS_CODE_ERROR
_BAD_ID = base64.b64encode(b"\x00").decode()  # an id that is neither hex nor base64 becomes one of the wrong length


class BadExport(Exception):
    """A body that is not an OTLP trace export at all: the answer is 4xx with `code` and nothing is stored."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass(frozen=True)
class SpanIn:
    """One span as the mapping reads it: ids in lowercase hex, times in ns since the epoch, attributes as values."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)
    status_code: int = 0
    status_message: str = ""
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str = ""

    @property
    def is_error(self) -> bool:
        return self.status_code == STATUS_ERROR


@dataclass
class Decoded:
    spans: list[SpanIn]
    rejected: int = 0
    messages: list[str] = field(default_factory=list)

    def reject(self, message: str) -> None:
        self.rejected += 1
        if len(self.messages) < 5:
            self.messages.append(message)


def media_type(content_type: str | None) -> str:
    """The media type of a Content-Type header, without parameters (`application/json; charset=utf-8`)."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def inflate(body: bytes, content_encoding: str | None, *, limit: int) -> bytes:
    """The body with its Content-Encoding undone (gzip, deflate, identity); more than `limit` bytes is a 413."""
    encoding = (content_encoding or "identity").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate"):
        raise BadExport(415, "unsupported_content_encoding", f"Content-Encoding {encoding!r} is not supported; use gzip or none.")
    try:
        if encoding == "gzip":
            with gzip.GzipFile(fileobj=io.BytesIO(body)) as stream:
                data = stream.read(limit + 1)
        else:
            data = zlib.decompressobj().decompress(body, limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise BadExport(400, "invalid_content_encoding", f"The body is not valid {encoding}: {exc}.") from None
    if len(data) > limit:
        raise BadExport(413, "body_too_large", f"The decompressed body is over the limit of {limit} bytes.")
    return data


def decode_request(body: bytes, kind: str) -> ExportTraceServiceRequest:
    """The export request of a body in `kind` (PROTOBUF or JSON); an undecodable body is a 400 naming what failed."""
    request = ExportTraceServiceRequest()
    if kind == PROTOBUF:
        try:
            request.ParseFromString(body)
        except DecodeError as exc:
            raise BadExport(400, "invalid_protobuf", f"The body is not an ExportTraceServiceRequest: {exc}.") from None
        return request
    if not body.strip():
        return request
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadExport(400, "invalid_json", f"The body is not JSON: {exc}.") from None
    if not isinstance(data, dict):
        raise BadExport(400, "invalid_json", "The body must be a JSON object with resourceSpans.")
    _ids_to_base64(data)
    try:
        json_format.ParseDict(data, request, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise BadExport(400, "invalid_otlp_json", f"The body is not an OTLP/JSON ExportTraceServiceRequest: {exc}.") from None
    return request


def _ids_to_base64(data: dict[str, Any]) -> None:
    """OTLP/JSON ids are hex; protobuf's JSON mapping wants base64 for bytes. Rewrite them in place."""
    for resource_spans in _list(data, "resourceSpans", "resource_spans"):
        for scope_spans in _list(resource_spans, "scopeSpans", "scope_spans"):
            for span in _list(scope_spans, "spans"):
                if not isinstance(span, dict):
                    continue
                _fix_ids(span, TRACE_ID_BYTES, SPAN_ID_BYTES)
                for link in _list(span, "links"):
                    if isinstance(link, dict):
                        _fix_ids(link, TRACE_ID_BYTES, SPAN_ID_BYTES)


def _fix_ids(item: dict[str, Any], trace_len: int, span_len: int) -> None:
    for names, size in ((("traceId", "trace_id"), trace_len), (("spanId", "span_id"), span_len), (("parentSpanId", "parent_span_id"), span_len)):
        for name in names:
            if name in item:
                item[name] = _as_base64(item[name], size)


def _as_base64(value: Any, size: int) -> Any:
    if not isinstance(value, str) or not value:
        return value
    if len(value) == 2 * size:
        try:
            return base64.b64encode(bytes.fromhex(value)).decode()
        except ValueError:
            pass
    standard = value.replace("-", "+").replace("_", "/")  # url-safe base64 too
    try:
        base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
    except (binascii.Error, ValueError):
        return _BAD_ID
    return standard + "=" * (-len(standard) % 4)


def _list(container: Any, *names: str) -> list[Any]:
    if not isinstance(container, dict):
        return []
    for name in names:
        value = container.get(name)
        if isinstance(value, list):
            return value
    return []


def spans_of(request: ExportTraceServiceRequest) -> Decoded:
    """Every span of the request as a SpanIn, and the ones refused with why (wrong id lengths)."""
    out = Decoded(spans=[])
    for resource_spans in request.resource_spans:
        resource = attributes_of(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            for span in scope_spans.spans:
                trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
                if len(trace_id) != TRACE_ID_BYTES or not any(trace_id):
                    out.reject(f"span {span.name!r}: traceId must be {TRACE_ID_BYTES} bytes (32 hex digits), not all zero")
                    continue
                if len(span_id) != SPAN_ID_BYTES or not any(span_id):
                    out.reject(f"span {span.name!r}: spanId must be {SPAN_ID_BYTES} bytes (16 hex digits), not all zero")
                    continue
                if parent and len(parent) != SPAN_ID_BYTES:
                    out.reject(f"span {span.name!r}: parentSpanId must be empty or {SPAN_ID_BYTES} bytes (16 hex digits)")
                    continue
                span_in = SpanIn(
                    trace_id=trace_id.hex(),
                    span_id=span_id.hex(),
                    parent_span_id=parent.hex() if any(parent) else "",
                    name=span.name,
                    kind=int(span.kind),
                    start_ns=int(span.start_time_unix_nano),
                    end_ns=int(span.end_time_unix_nano),
                    attributes=attributes_of(span.attributes),
                    events=[(event.name, int(event.time_unix_nano), attributes_of(event.attributes)) for event in span.events],
                    status_code=int(span.status.code),
                    status_message=span.status.message,
                    resource=resource,
                    scope=scope,
                )
                unfit = unstorable_field(span_in)
                if unfit:
                    out.reject(f"span {span.name[:200]!r}: {unfit}")
                    continue
                out.spans.append(span_in)
    return out


def unstorable_field(span: SpanIn) -> str:
    """Why a span cannot go into the ledger as it is (a NUL character, which no Postgres text holds, or a NaN or
    infinite number, which JSON cannot carry), naming the field; "" when it can."""
    fields: list[tuple[str, Any]] = [("name", span.name), ("status.message", span.status_message), ("scope.name", span.scope)]
    fields += [(f"attributes.{key}", (key, value)) for key, value in span.attributes.items()]
    fields += [(f"resource.{key}", (key, value)) for key, value in span.resource.items()]
    fields += [(f"events[{index}]", event) for index, event in enumerate(span.events)]
    for where, value in fields:
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, str) and "\x00" in item:
                return f"{where[:200]!r} holds the NUL character (\\u0000), which cannot be stored"
            if isinstance(item, float) and not math.isfinite(item):
                return f"{where[:200]!r} holds NaN or Infinity; send a finite number"
            if isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, list | tuple):
                stack.extend(item)
    return ""


def attributes_of(pairs: Any) -> dict[str, Any]:
    """KeyValue list → dict of plain values."""
    return {pair.key: value_of(pair.value) for pair in pairs}


def value_of(value: AnyValue) -> Any:
    """An AnyValue as a plain value (bytes as base64 text: the ledger stores JSON)."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [value_of(item) for item in value.array_value.values]
    if which == "kvlist_value":
        return attributes_of(value.kvlist_value.values)
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    if which == "int_value":
        return int(value.int_value)
    return getattr(value, which)


def response_body(kind: str, *, rejected: int = 0, message: str = "") -> bytes:
    """An ExportTraceServiceResponse in the request's encoding (partial_success only when something was refused)."""
    response = ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    if kind == PROTOBUF:
        return response.SerializeToString()
    body: dict[str, Any] = {}
    if rejected or message:
        body["partialSuccess"] = {"rejectedSpans": str(rejected), "errorMessage": message}
    return orjson.dumps(body)
