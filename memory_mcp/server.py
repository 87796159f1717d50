"""The MCP server: tool and resource declarations (names, JSON schemas, documentation) over memory_mcp.tools.

One `MCPServer` per process serves every HTTP request (stateless, JSON responses); stdio builds its own with
the token it was started with. The caller of the message being handled is kept in a context variable by
`CallerScope` (the SDK's server middleware): it filters `tools/list` and `resources/list` by the token's
scopes and lets the tools find the credentials; each tool call checks token and scope itself.
"""

from __future__ import annotations

import contextvars
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from channels.db import database_sync_to_async
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import CallToolResult, ListResourcesResult, ListToolsResult, TextContent
from pydantic import Field

from memory_mcp import tools
from memory_mcp.principal import Credentials, Principal

# The scope each tool needs; tools/list shows a token only the tools its scopes allow.
TOOL_SCOPES = {
    "memory_search": "memory:read",
    "memory_recall": "memory:read",
    "memory_read": "memory:read",
    "memory_prior": "memory:read",
    "memory_proposal_status": "memory:read",
    "board_read": "memory:read",
    "state_get": "memory:read",
    "pool_facts": "memory:read",
    "memory_propose": "memory:write",
    "memory_note": "memory:write",
    "board_post": "memory:write",
    "memory_review": "review",
}
RESOURCE_SCOPE = "memory:read"

INSTRUCTIONS = (
    "Governed memory of one AWP experiment (the one the bearer token belongs to). Read with memory_search, "
    "memory_recall, memory_read and memory_prior. memory_propose never writes long-term memory: it puts the "
    "statement in the experiment's Review queue, where a person approves or rejects it in the dashboard; poll "
    "memory_proposal_status. memory_note writes the working tier (today's daily log)."
)


@dataclass(frozen=True)
class Call:
    """The caller of the message being handled, and the MCP client it speaks through."""

    credentials: Credentials
    client: str


current_call: contextvars.ContextVar[Call | None] = contextvars.ContextVar("awp_mcp_call", default=None)


def _client_label(ctx: ServerRequestContext[Any, Any]) -> str:
    params = getattr(getattr(ctx, "session", None), "client_params", None)
    info = getattr(params, "client_info", None)
    if info is None:
        return "mcp client (unnamed)"
    return f"{info.name} {info.version}".strip()[:120]


class CallerScope:
    """Server middleware: who is calling (HTTP: the mount's credentials; stdio: the command's token), what they see.

    Tool calls and resource reads look the token up themselves, in the same thread hop as their work; the
    listings look it up here to know the scopes.
    """

    def __init__(self, stdio_secret: str = "") -> None:
        self.stdio_secret = stdio_secret

    def _credentials(self, ctx: ServerRequestContext[Any, Any]) -> Credentials | None:
        request = ctx.request
        if request is not None:
            credentials = request.scope.get("state", {}).get("awp_credentials")
            return credentials if isinstance(credentials, Credentials) else None
        return Credentials(secret=self.stdio_secret) if self.stdio_secret else None

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        credentials = self._credentials(ctx)
        # Without credentials there is no caller: the tools refuse (invalid_token) and the listings are empty.
        reset = current_call.set(Call(credentials=credentials, client=_client_label(ctx)) if credentials else None)
        try:
            result = await call_next(ctx)
        finally:
            current_call.reset(reset)
        if ctx.method == "tools/call":
            return _clean_refusal(result)
        if ctx.method in ("tools/list", "resources/list"):
            principal = await database_sync_to_async(credentials.resolve)() if credentials else None
            if ctx.method == "tools/list":
                return _filtered_tools(result, principal)
            if principal is None or not principal.may(RESOURCE_SCOPE):
                return ListResourcesResult(resources=[])
        return result


_SDK_PREFIX = re.compile(r"^Error executing tool [\w.-]+: ")


def refusal_of(text: str) -> dict[str, Any]:
    """A failed call's text as {ok, code, message[, field]}: ours as sent, the SDK's argument errors named."""
    text = _SDK_PREFIX.sub("", text, count=1)
    try:
        body = json.loads(text)
        if isinstance(body, dict) and "code" in body:
            return body
    except ValueError:
        pass
    # pydantic's report: "1 validation error for <model>\n<field>\n  <message> [type=...]".
    lines = text.splitlines()
    if len(lines) >= 3 and "validation error" in lines[0]:
        message = lines[2].strip().split(" [type=")[0]
        return {"ok": False, "code": "invalid_arguments", "field": lines[1].strip(), "message": f"{lines[1].strip()}: {message}"}
    return {"ok": False, "code": "tool_failed", "message": text}


def _clean_refusal(result: HandlerResult) -> HandlerResult:
    """A failed tools/call answers {ok, code, message[, field]} as JSON text (the SDK's prefix taken off)."""
    if isinstance(result, CallToolResult) and result.is_error and result.content and isinstance(result.content[0], TextContent):
        body = refusal_of(result.content[0].text)
        return result.model_copy(update={"content": [TextContent(type="text", text=json.dumps(body))]})
    if isinstance(result, dict) and result.get("isError") and result.get("content"):
        first = result["content"][0]
        if isinstance(first, dict) and first.get("type") == "text":
            return {**result, "content": [{"type": "text", "text": json.dumps(refusal_of(str(first.get("text", ""))))}]}
    return result


def _filtered_tools(result: HandlerResult, principal: Principal | None) -> HandlerResult:
    def offered(name: str) -> bool:
        return principal is not None and principal.may(TOOL_SCOPES.get(name, "review"))

    if isinstance(result, ListToolsResult):
        return result.model_copy(update={"tools": [tool for tool in result.tools if offered(tool.name)]})
    if isinstance(result, dict):
        return {**result, "tools": [tool for tool in result.get("tools", []) if offered(str(tool.get("name", "")))]}
    return result


def unfit_argument(arguments: dict[str, Any]) -> tools.Refusal | None:
    """The refusal of an argument no tool can use, naming it: a NUL character (no Postgres text holds one: it was an
    unexplained `tool_failed`) or a NaN/Infinity (not JSON). What the API's one JSON reader refuses in a body."""
    stack: list[tuple[str, Any]] = list(arguments.items())
    while stack:
        path, value = stack.pop()
        field = path.replace("\x00", "\\u0000")[:200]
        if isinstance(value, str) and "\x00" in value:
            return tools.Refusal("nul_character", f"{field} contains the NUL character (\\u0000), which cannot be stored.", field=field)
        if isinstance(value, float) and not math.isfinite(value):
            return tools.Refusal("non_finite_number", f"{field} is NaN or Infinity; send a finite number.", field=field)
        if isinstance(value, dict):
            stack.extend((f"{path}.{key}", key) for key in value)
            stack.extend((f"{path}.{key}", item) for key, item in value.items())
        elif isinstance(value, list | tuple):
            stack.extend((f"{path}[{index}]", item) for index, item in enumerate(value))
    return None


async def run_tool(name: str, impl: Callable[..., dict[str, Any]], **kwargs: Any) -> CallToolResult:
    """Run `impl` for the current caller with the ORM off the event loop (token, scope and work in one hop)."""
    call = current_call.get()
    if call is None:
        raise ToolError(json.dumps(tools.Refusal("invalid_token", "No valid bearer token.").body()))
    unfit = unfit_argument(kwargs)
    if unfit is not None:
        raise ToolError(json.dumps(unfit.body()))
    if "client" in kwargs:
        kwargs["client"] = f"MCP {call.client}"
    refused, body = await database_sync_to_async(tools.answer)(impl, call.credentials, scope=TOOL_SCOPES[name], **kwargs)
    if refused:
        raise ToolError(json.dumps(body))
    # The answer as built, structured and as compact JSON text (older clients read the text): no output model to
    # validate it against again, nothing for the client to check it with either.
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(body, ensure_ascii=False))], structured_content=body)


# ---------------------------------------------------------------- argument types (JSON schema and docs)

AgentId = Annotated[str, Field(max_length=200, description="The agent acting (default: the X-AWP-Agent header, else the token's name); memory.access_control applies to it.")]
RunId = Annotated[str, Field(max_length=200, description="The runtime's run id this call belongs to (optional).")]
Mode = Literal["keyword", "semantic", "date_range", "agent_filter"]
Tier = Literal["long_term", "working", "episodic", "semantic", "notes", "shared"]
Kind = Literal["fact", "tool", "antipattern"]


def build_server(*, stdio_secret: str = "") -> MCPServer:
    """The memory MCP server with every tool and resource; `stdio_secret` is the token of a stdio process."""
    server = MCPServer(name="awp-memory", title="AWP memory", instructions=INSTRUCTIONS, version="1", log_level="WARNING")
    server.middleware.append(CallerScope(stdio_secret))

    @server.tool(name="memory_search", description="Search the experiment's memory (the memory API's search): keyword, semantic, date_range or agent_filter mode over the tiers. Answers {results: [{tier, source, content, score, timestamp}], total}.")
    async def memory_search(
        query: Annotated[str, Field(max_length=2000, description="What to look for.")] = "",
        mode: Annotated[Mode, Field(description="keyword (default), semantic, date_range or agent_filter.")] = "keyword",
        tiers: Annotated[list[Tier], Field(max_length=8, description="Tiers to search (default: the mode's tiers).")] = [],  # noqa: B006 - pydantic copies defaults
        max_results: Annotated[int, Field(ge=1, le=100, description="At most this many results.")] = 10,
        agent_filter: Annotated[list[str], Field(max_length=100, description="agent_filter mode: these agents' entries.")] = [],  # noqa: B006
        start: Annotated[str, Field(max_length=10, description="date_range mode: first day, YYYY-MM-DD.")] = "",
        end: Annotated[str, Field(max_length=10, description="date_range mode: last day, YYYY-MM-DD.")] = "",
        agent_id: AgentId = "",
        run_id: RunId = "",
    ) -> CallToolResult:
        return await run_tool("memory_search", tools.search, query=query, mode=mode, tiers=list(tiers), max_results=max_results,
                              agent_filter=agent_filter, start=start, end=end, agent_id=agent_id, run_id=run_id)  # fmt: skip

    @server.tool(name="memory_recall", description="The recall block this agent would receive now: its own episodes plus what the sharing rules let it see, ranked by salience. Answers {agent_id, turn, query, top_k, items, below_cut, block}.")
    async def memory_recall(
        agent_id: AgentId = "",
        query: Annotated[str, Field(max_length=2000, description="What the agent is about to do (relevance).")] = "",
        top_k: Annotated[int | None, Field(ge=1, le=100, description="How many episodes (default: the protocol's).")] = None,
        run_id: RunId = "",
    ) -> CallToolResult:
        return await run_tool("memory_recall", tools.recall, agent_id=agent_id, query=query, top_k=top_k, run_id=run_id)

    @server.tool(name="memory_read", description="Long-term memory (MEMORY.md) at its current version, or at `version`. Answers {version, content, exists, updated_at}.")
    async def memory_read(
        version: Annotated[int | None, Field(ge=1, description="A MEMORY.md version (default: the current one).")] = None,
        agent_id: AgentId = "",
        run_id: RunId = "",
    ) -> CallToolResult:
        return await run_tool("memory_read", tools.read_long_term, version=version, agent_id=agent_id, run_id=run_id)

    @server.tool(name="memory_prior", description="The prior-run block (## PRIOR RUN MEMORY: known tools, confirmed facts, antipatterns), built from promoted memory only. Answers {block}.")
    async def memory_prior(agent_id: AgentId = "", run_id: RunId = "") -> CallToolResult:
        return await run_tool("memory_prior", tools.prior, agent_id=agent_id, run_id=run_id)

    @server.tool(name="memory_propose", description="Propose a fact, tool recipe or antipattern for long-term memory. It waits in the experiment's Review queue (with this agent and MCP client as provenance) until a person approves or rejects it; it is never written to MEMORY.md directly. Answers {status: 'proposed', proposal_id, review_url}. The same idempotency_key again returns the first proposal.")
    async def memory_propose(
        statement: Annotated[str, Field(min_length=1, max_length=2000, description="The fact, tool recipe or antipattern, in one or a few sentences.")],
        kind: Annotated[Kind, Field(description="fact, tool or antipattern.")] = "fact",
        evidence: Annotated[str, Field(max_length=4000, description="Why it holds: what was observed.")] = "",
        source: Annotated[str, Field(max_length=1000, description="Where it comes from (a file, URL, run, tool output).")] = "",
        idempotency_key: Annotated[str, Field(max_length=200, description="A client key; retrying with it lands the proposal once.")] = "",
        agent_id: AgentId = "",
        run_id: RunId = "",
    ) -> CallToolResult:
        return await run_tool("memory_propose", tools.propose, client="", statement=statement, kind=kind, evidence=evidence,
                              source=source, idempotency_key=idempotency_key, agent_id=agent_id, run_id=run_id)  # fmt: skip

    @server.tool(name="memory_proposal_status", description="Where a proposal stands: pending; approved (with the MEMORY.md version it went into); rejected (with the reason); retracted.")
    async def memory_proposal_status(proposal_id: Annotated[int, Field(ge=1, description="The id memory_propose answered.")]) -> CallToolResult:
        return await run_tool("memory_proposal_status", tools.proposal_status, proposal_id=proposal_id)

    @server.tool(name="memory_note", description="Append a note to the working tier (today's daily log), as the memory API's daily write. Answers {target, date, path} (or {target, run_id, seq} with a run).")
    async def memory_note(
        content: Annotated[str, Field(min_length=1, max_length=100_000, description="The note.")],
        agent_id: AgentId = "",
        run_id: RunId = "",
    ) -> CallToolResult:
        return await run_tool("memory_note", tools.note, content=content, agent_id=agent_id, run_id=run_id)

    @server.tool(name="board_post", description="Post an entry on a run's blackboard. Answers {entry_id, seq}.")
    async def board_post(
        run_id: Annotated[str, Field(min_length=1, max_length=200, description="The run whose board to post on.")],
        topic: Annotated[str, Field(min_length=1, max_length=300, description="The entry's topic.")],
        payload: Annotated[dict[str, Any], Field(description="The entry's JSON payload.")] = {},  # noqa: B006
        agent_id: AgentId = "",
    ) -> CallToolResult:
        return await run_tool("board_post", tools.board_post, run_id=run_id, topic=topic, payload=payload, agent_id=agent_id)

    @server.tool(name="board_read", description="Read a run's blackboard, optionally one topic and only entries newer than `since` (epoch seconds). Answers {entries: [{id, ts, topic, worker_id, payload}]}.")
    async def board_read(
        run_id: Annotated[str, Field(min_length=1, max_length=200, description="The run whose board to read.")],
        topic: Annotated[str, Field(max_length=300, description="Only this topic.")] = "",
        since: Annotated[float | None, Field(description="Only entries newer than this epoch timestamp.")] = None,
    ) -> CallToolResult:
        return await run_tool("board_read", tools.board_read, run_id=run_id, topic=topic, since=since)

    @server.tool(name="state_get", description="A run's state at `seq` (default: now) as the calling agent sees it under the protocol's sharing rules, sensitive fields masked. Answers {run_id, seq, agent_id, state}.")
    async def state_get(
        run_id: Annotated[str, Field(min_length=1, max_length=200, description="The run.")],
        seq: Annotated[int | None, Field(ge=0, description="A ledger position (default: the newest).")] = None,
        agent_id: AgentId = "",
    ) -> CallToolResult:
        return await run_tool("state_get", tools.state_get, run_id=run_id, seq=seq, agent_id=agent_id)

    @server.tool(name="pool_facts", description="The shared pool's facts this experiment subscribes to, newest version of each. Answers {facts: [{fact_id, version, statement, tags, label}]}.")
    async def pool_facts() -> CallToolResult:
        return await run_tool("pool_facts", tools.pool_facts)

    @server.tool(name="memory_review", description="Vote on a proposal (approve or reject) as the user this token was issued to; the experiment's quorum decides. Answers the proposal's status.")
    async def memory_review(
        proposal_id: Annotated[int, Field(ge=1, description="The proposal.")],
        verdict: Annotated[Literal["approve", "reject"], Field(description="approve or reject.")],
        text: Annotated[str, Field(max_length=5000, description="Approve this edited text instead.")] = "",
        reason: Annotated[str, Field(max_length=2000, description="Why.")] = "",
    ) -> CallToolResult:
        return await run_tool("memory_review", tools.review, client="", proposal_id=proposal_id, verdict=verdict, text=text, reason=reason)

    @server.resource("awp://memory/MEMORY.md", name="MEMORY.md", description="The experiment's long-term memory, current version.", mime_type="text/markdown")
    async def memory_md() -> str:
        answer = await _resource(tools.read_long_term, agent_id="", version=None)
        return str(answer["content"])

    @server.resource("awp://experiment/protocol", name="protocol", description="The experiment's protocol (goal, hypothesis, status, workflow settings).", mime_type="application/json")
    async def protocol() -> str:
        return json.dumps(await _resource(tools.protocol), ensure_ascii=False, indent=2)

    return server


async def _resource(impl: Callable[..., dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
    call = current_call.get()
    if call is None:
        raise ResourceError(json.dumps(tools.Refusal("invalid_token", "No valid bearer token.").body()))
    refused, body = await database_sync_to_async(tools.answer)(impl, call.credentials, scope=RESOURCE_SCOPE, **kwargs)
    if refused:
        raise ResourceError(json.dumps(body))
    return body
