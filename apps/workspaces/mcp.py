"""The per-workspace MCP endpoint, /mcp/<workspace_id>/, built on the official `mcp` SDK (2.x MCPServer,
streamable HTTP).

Who a request acts for comes from the URL and its bearer token only: `McpEndpoint` checks the token
(stored as a SHA-256, revocable, issued for exactly one workspace) before the SDK sees the request and
puts the principal into the ASGI scope; every tool reads the workspace from there. No tool has a
workspace argument, and a token for workspace A is refused (401) at /mcp/B/. A browser session is not
enough: MCP requests need the token.

The SDK runs stateless with JSON responses: every POST is self-contained, so any web process behind a
load balancer can answer it (no sticky sessions), and the workspace is re-checked on every request.

Neither Daphne nor uvicorn (`--lifespan off`, Channels has no lifespan handler) runs an ASGI lifespan,
so the SDK's session manager (its task group) is started lazily, once per event loop, by the first
request. Host and Origin are checked here against Django's ALLOWED_HOSTS / CSRF_TRUSTED_ORIGINS with
Django's own matcher (it understands ".example.com" and "*", the SDK's list does not), and the SDK's
own DNS-rebinding check is switched off so it does not answer 421 for hosts Django allows.

`McpEndpoint` and `route_mcp` are the machinery every MCP endpoint shares (the mailbox endpoint,
apps/mcpserver, subclasses it); mailagent/asgi.py mounts both through apps.mcpserver.server.with_mcp.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import logging
import re
import weakref
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Annotated, Any, Literal

from channels.db import database_sync_to_async
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, InputRequiredResult, TextContent
from pydantic import BaseModel, ConfigDict, Field, StrictStr

from apps.workspaces import actions, selectors
from apps.workspaces.models import CreatedBy, EntrySource, Workspace
from mailagent.request_limits import grant_authenticated_limit
from mailagent.textinput import nul_locations, nul_message

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PATH_RE = re.compile(r"^/mcp/(?P<workspace_id>[0-9]{1,18})/?$")
PRINCIPAL_KEY = "mailagent.mcp_principal"
METADATA_PREFIX = "/.well-known/oauth-protected-resource"
JSON_TYPES = ("application/json",)
# A 5 MB item as base64 inside JSON-RPC, with room for the envelope.
MAX_BODY_BYTES = actions.MAX_ITEM_BYTES * 4 // 3 + 256 * 1024
LIST_LIMIT = 200

INBOX_PUSH_DESCRIPTION = """Put something in front of the user: the entry appears in their Inbox.

Push when there is something the user should see, not on every operation:
- You finished a piece of work the user asked for: push with a docs pointer to the report.
- You are blocked on a decision the user has to make: push with comments asking the question.
- A long-running job has a status worth a check-in: optional comments summary plus artifacts as docs.
Do not push internal tool calls, intermediate scratch or debugging output.

docs are pointers, not copies: [{"path": "reports/summary.md"}] names items of this workspace (give items a
path with workspace_add_item(path=...)). The user sees their current content when they open the entry, so
keep editing them; an item deleted later shows as "no longer in the workspace". At most 50.
comments is markdown, your voice to the user (at most 64 KB). Give at least one of docs or comments.
The workspace is the one this endpoint belongs to; there is no workspace argument."""


MAX_DATA_CHARS_PATCH = actions.MAX_ITEM_BYTES * 4 // 3 + 4


class DocPointer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: StrictStr = Field(..., description="Path of a live item of this workspace, e.g. reports/summary.md")


class ItemPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: StrictStr | None = Field(None, max_length=300, description="New label")
    description: StrictStr | None = Field(None, description="New description")
    mimeType: StrictStr | None = Field(None, max_length=255, description="New MIME type")
    encoding: Literal["utf8", "base64"] | None = Field(None, description="The encoding of the new data")
    data: StrictStr | None = Field(None, max_length=MAX_DATA_CHARS_PATCH, description="New content (at most 5 MB)")
    tags: list[StrictStr] | None = Field(None, description="New tags (replace the old ones)")
    path: StrictStr | None = Field(None, max_length=500, description="New path; empty string removes it")


def _principal(ctx: Context) -> selectors.McpPrincipal:
    request = ctx.request_context.request
    principal = getattr(request, "scope", {}).get(PRINCIPAL_KEY)
    if not isinstance(principal, selectors.McpPrincipal):  # only reachable if mounted without McpEndpoint
        raise ToolError("this request is not authenticated for a workspace")
    return principal


def _workspace(principal: selectors.McpPrincipal) -> Workspace:
    workspace = Workspace.objects.filter(pk=principal.workspace_id, owner_id=principal.owner_id).first()
    if workspace is None:
        raise ToolError("this workspace no longer exists")
    return workspace


def _actor(principal: selectors.McpPrincipal) -> dict[str, Any]:
    return {"createdBy": CreatedBy.AGENT, "mcp": True, "tokenId": principal.token_id}


def _item_id(workspace: Workspace, id: str | None, path: str | None) -> int:
    if id:
        try:
            return int(id.strip())
        except ValueError:
            raise ToolError(f"no item {id!r}: item ids are numbers as workspace_list_items shows them") from None
    if path:
        try:
            clean = actions.clean_path(path)
        except actions.WorkspaceError as exc:
            raise ToolError(str(exc)) from None
        found = selectors.list_items(workspace=workspace).filter(path=clean).values_list("pk", flat=True).first()
        if found is None:
            raise ToolError(f"no live item with path {clean!r} in this workspace")
        return int(found)
    raise ToolError("give the item's id or its path")


# --- tool implementations (sync, run through database_sync_to_async) -------------------------------------


def _add_item(principal: selectors.McpPrincipal, fields: dict[str, Any]) -> dict[str, Any]:
    workspace = _workspace(principal)
    try:
        item = actions.add_item(
            workspace=workspace,
            context={"mcp": True, "tokenId": principal.token_id},
            created_by=CreatedBy.AGENT,
            **fields,
        )
    except actions.WorkspaceError as exc:
        raise ToolError(str(exc)) from None
    return {"item": selectors.item_json(item, include_data=False)}


def _list_items(principal: selectors.McpPrincipal, mime_type: str | None, tag: str | None, deleted: bool) -> Any:
    workspace = _workspace(principal)
    items = selectors.list_items(workspace=workspace, include_deleted=deleted, mime_type=mime_type, tag=tag)
    return {"items": [selectors.item_json(item, include_data=False) for item in items[:LIST_LIMIT]]}


def _get_item(principal: selectors.McpPrincipal, id: str | None, path: str | None) -> dict[str, Any]:
    workspace = _workspace(principal)
    item = selectors.get_item(workspace=workspace, item_id=_item_id(workspace, id, path))
    if item is None:
        raise ToolError(f"no item {id or path} in this workspace")
    return {"item": selectors.item_json(item)}


def _update_item(
    principal: selectors.McpPrincipal, id: str | None, path: str | None, patch: ItemPatch, expected: int | None
) -> dict[str, Any]:
    workspace = _workspace(principal)
    changes = patch.model_dump(exclude_none=True)
    if not changes:
        raise ToolError("the patch is empty: give at least one of " + ", ".join(ItemPatch.model_fields))
    try:
        item = actions.update_item(
            item_id=_item_id(workspace, id, path),
            workspace=workspace,
            patch=actions.patch_from_spec(changes),
            expected_revision=expected,
            actor=_actor(principal),
        )
    except actions.RevisionConflict as exc:
        raise ToolError(f"{exc}; read the item again and retry with expectedRevision={exc.current_revision}") from None
    except actions.WorkspaceError as exc:
        raise ToolError(str(exc)) from None
    return {"item": selectors.item_json(item, include_data=False)}


def _remove_item(principal: selectors.McpPrincipal, id: str | None, path: str | None, hard: bool) -> dict[str, Any]:
    workspace = _workspace(principal)
    try:
        item_id = _item_id(workspace, id, path)
        actions.remove_item(item_id=item_id, workspace=workspace, hard=hard, actor=_actor(principal))
    except actions.WorkspaceError as exc:
        raise ToolError(str(exc)) from None
    return {"removed": True}


def _inbox_push(principal: selectors.McpPrincipal, docs: list[DocPointer] | None, comments: str) -> dict[str, Any]:
    workspace = _workspace(principal)
    try:
        entry = actions.push_inbox_entry(
            workspace=workspace,
            docs=[doc.model_dump() for doc in docs] if docs is not None else None,
            comments=comments,
            source=EntrySource.MCP,
        )
    except actions.InboxError as exc:
        raise ToolError(str(exc)) from None
    return {"entryId": str(entry.pk), "ts": selectors.entry_ts(entry), "workspaceLabel": entry.workspace_label}


def _call(fn: Callable[..., Any], *args: Any) -> Awaitable[Any]:
    # Not thread-sensitive: concurrent clients' calls go side by side on worker threads (each with its own
    # database connection) instead of queueing on the one thread Django's sync code shares.
    return database_sync_to_async(fn, thread_sensitive=False)(*args)


class ItemOut(BaseModel):
    """An item as the tools return it (the spec's WorkspaceItem)."""

    id: str = Field(description="The item's id (a number, as a string)")
    label: str
    description: str
    mimeType: str
    encoding: Literal["utf8", "base64"]
    tags: list[str]
    created: str = Field(description="ISO 8601")
    updated: str = Field(description="ISO 8601")
    revision: int = Field(description="Bumped on every change; pass it as expectedRevision to update safely")
    deleted: bool
    context: dict[str, Any] = Field(description="Who made it and from where")
    path: str | None = Field(description="Where inbox_push docs find it")
    data: str | None = Field(None, description="The content (workspace_get_item only)")
    size: int | None = Field(None, description="Characters of data (lists leave the data out)")


class ItemResult(BaseModel):
    item: ItemOut


class ItemsResult(BaseModel):
    items: list[ItemOut] = Field(description=f"At most {LIST_LIMIT}, newest first")


class RemovedResult(BaseModel):
    removed: bool


class PushedResult(BaseModel):
    entryId: str = Field(description="The Inbox entry's id")
    ts: int = Field(description="Its time, milliseconds since the epoch")
    workspaceLabel: str = Field(description="The heading the user sees on the entry")


ItemId = Annotated[
    StrictStr | None, Field(max_length=20, description="The item's id (from workspace_list_items); or give path")
]
ItemPath = Annotated[
    StrictStr | None,
    Field(max_length=actions.MAX_PATH_CHARS, description="The item's path, e.g. reports/summary.md; or give id"),
]
MAX_DATA_CHARS = actions.MAX_ITEM_BYTES * 4 // 3 + 4  # 5 MB decoded, as base64


def build_server() -> MCPServer:
    server: MCPServer = StrictMCPServer(
        "mailagent-workspace",
        version=server_version(),
        instructions=(
            "A mailagent workspace: keep your work products here as items (give the ones you want to show the "
            "user a path), and use inbox_push to put finished work or a question in front of the user."
        ),
        warn_on_duplicate_tools=False,
    )

    @server.tool(name="workspace_add_item", description="Add an item (a document, note, image…) to this workspace.")
    async def workspace_add_item(
        ctx: Context,
        data: Annotated[
            StrictStr,
            Field(max_length=MAX_DATA_CHARS, description="The content (at most 5 MB); base64 when encoding is base64"),
        ] = "",
        label: Annotated[StrictStr, Field(max_length=300, description="A short title the user sees")] = "",
        description: Annotated[StrictStr, Field(description="What the item is, for the user")] = "",
        mimeType: Annotated[
            StrictStr, Field(max_length=255, description="text/markdown, text/plain, application/json, image/png…")
        ] = "text/markdown",
        encoding: Annotated[
            Literal["utf8", "base64"], Field(description="utf8 for text, base64 for binary data")
        ] = "utf8",
        tags: Annotated[list[StrictStr] | None, Field(description="Free-form tags, e.g. ['draft', 'q3']")] = None,
        path: Annotated[
            StrictStr | None,
            Field(
                max_length=actions.MAX_PATH_CHARS,
                description="Where inbox_push docs find it, e.g. reports/summary.md (unique)",
            ),
        ] = None,
    ) -> ItemResult:
        fields = {
            "data": data,
            "label": label,
            "description": description,
            "mime_type": mimeType,
            "encoding": encoding,
            "tags": tags or [],
            "path": path,
        }
        return ItemResult.model_validate(await _call(_add_item, _principal(ctx), fields))

    @server.tool(name="workspace_list_items", description="List this workspace's items (without their data).")
    async def workspace_list_items(
        ctx: Context,
        mimeType: Annotated[
            StrictStr | None, Field(max_length=255, description="Only this type, e.g. text/markdown or image/*")
        ] = None,
        tag: Annotated[StrictStr | None, Field(max_length=100, description="Only items with this tag")] = None,
        includeDeleted: Annotated[bool, Field(description="Also list soft-deleted items")] = False,
    ) -> ItemsResult:
        return ItemsResult.model_validate(await _call(_list_items, _principal(ctx), mimeType, tag, includeDeleted))

    @server.tool(name="workspace_get_item", description="Read one item with its data, by id or by path.")
    async def workspace_get_item(ctx: Context, id: ItemId = None, path: ItemPath = None) -> ItemResult:
        return ItemResult.model_validate(await _call(_get_item, _principal(ctx), id, path))

    @server.tool(
        name="workspace_update_item",
        description="Change an item (by id or path); pass expectedRevision to avoid overwriting a newer revision.",
    )
    async def workspace_update_item(
        ctx: Context,
        patch: Annotated[ItemPatch, Field(description="The fields to change; the others stay")],
        id: ItemId = None,
        path: ItemPath = None,
        expectedRevision: Annotated[
            int | None, Field(ge=1, description="Fail (and change nothing) unless the item is at this revision")
        ] = None,
    ) -> ItemResult:
        return ItemResult.model_validate(await _call(_update_item, _principal(ctx), id, path, patch, expectedRevision))

    @server.tool(name="workspace_remove_item", description="Remove an item (soft unless hardDelete), by id or path.")
    async def workspace_remove_item(
        ctx: Context,
        id: ItemId = None,
        path: ItemPath = None,
        hardDelete: Annotated[bool, Field(description="Delete for good instead of marking it deleted")] = False,
    ) -> RemovedResult:
        return RemovedResult.model_validate(await _call(_remove_item, _principal(ctx), id, path, hardDelete))

    @server.tool(name="inbox_push", description=INBOX_PUSH_DESCRIPTION)
    async def inbox_push(
        ctx: Context,
        docs: Annotated[
            list[DocPointer] | None,
            Field(max_length=actions.MAX_DOCS, description="Pointers to items of this workspace: [{path}], at most 50"),
        ] = None,
        comments: Annotated[
            StrictStr,
            Field(
                max_length=actions.MAX_COMMENT_BYTES,
                description="Markdown: what you did or what you ask (at most 64 KB)",
            ),
        ] = "",
    ) -> PushedResult:
        return PushedResult.model_validate(await _call(_inbox_push, _principal(ctx), docs, comments))

    return server


def server_version() -> str:
    try:
        return importlib.metadata.version("mailagent")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout without `pip install -e .`
        return "0.0.0"


class StrictMCPServer(MCPServer):
    """MCPServer that answers an unknown tool name with JSON-RPC -32602 (invalid params), as the MCP spec
    asks, instead of a tool result with isError; and arguments carrying a NUL character with a tool error that
    names them, on every database alike (PostgreSQL cannot store NUL; the SDK's generic "Error executing
    tool" was all a client saw)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        if self._tool_manager.get_tool(name) is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {name}", data={"tool": name[:100]})
        locations = nul_locations(arguments)
        if locations:
            return CallToolResult(content=[TextContent(type="text", text=nul_message(locations))], is_error=True)
        return await super().call_tool(name, arguments, context)


class _LoopRunner:
    """One MCP server and its session manager, running for the life of one event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, build: Callable[[], MCPServer], max_body: int) -> None:
        self.server = build()
        self.server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            max_request_body_size=max_body,
            # Host/Origin are checked by McpEndpoint with Django's ALLOWED_HOSTS semantics.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.manager: StreamableHTTPSessionManager = self.server.session_manager
        self.ready = asyncio.Event()
        self.failure: BaseException | None = None
        self.task = loop.create_task(self._run(), name="mcp-session-manager")

    async def _run(self) -> None:
        try:
            async with self.manager.run():
                self.ready.set()
                await asyncio.Event().wait()  # until the loop ends
        except BaseException as exc:
            self.failure = exc
            self.ready.set()
            raise


async def _respond(
    send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _allowed_hosts() -> list[str]:
    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]  # what Django allows in the same case
    return allowed


def _host_allowed(host: str | None) -> bool:
    if not host:
        return False
    domain, _port = split_domain_port(host)
    return bool(domain) and validate_host(domain, _allowed_hosts())


def _origin_allowed(origin: str | None, host: str) -> bool:
    if not origin:
        return True  # not a browser, or same-origin without the header
    if origin in settings.CSRF_TRUSTED_ORIGINS:
        return True
    scheme, _, rest = origin.partition("://")
    return scheme in ("http", "https") and rest == host


def base_url(scope: Scope) -> str:
    """The URL the client reached us at (scheme from the server or a trusted proxy's header, Host as sent)."""
    scheme = str(scope.get("scheme") or "http")
    forwarded = _header(scope, b"x-forwarded-proto")
    if forwarded and getattr(settings, "SECURE_PROXY_SSL_HEADER", None):
        scheme = forwarded.split(",")[0].strip() or scheme
    return f"{scheme}://{_header(scope, b'host') or 'localhost'}"


class McpEndpoint:
    """An MCP endpoint on the SDK: host/origin checks, bearer-token auth, method and Content-Type checks
    (a stateless server has no event stream to GET and no session to DELETE: 405; a POST that is not JSON:
    415), then the SDK. RFC 9728 protected-resource metadata is served for it under
    /.well-known/oauth-protected-resource/<its path>, and every 401 points there (`resource_metadata`), so a
    client reports a bad token instead of starting an OAuth login. Subclasses say which paths are theirs,
    how a token becomes a principal, and which server to build."""

    path_re: re.Pattern[str] = PATH_RE
    max_body = MAX_BODY_BYTES
    resource_name = "mailagent workspace"
    missing_token_text = "A workspace token is required (Authorization: Bearer)"  # noqa: S105 -- a message
    bad_token_text = "The token is unknown, revoked, or was issued for another workspace"  # noqa: S105

    def __init__(self) -> None:
        self._runners: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopRunner] = weakref.WeakKeyDictionary()

    def build_server(self) -> MCPServer:
        return build_server()

    def authenticate(self, raw: str, match: re.Match[str]) -> Any:
        """The principal for `raw` at the matched path, or None (sync: runs in a database thread)."""
        return _authenticate(raw, int(match["workspace_id"]))

    def handles(self, path: str) -> bool:
        if path.startswith(METADATA_PREFIX):
            path = path[len(METADATA_PREFIX) :]
        return self.path_re.match(path) is not None

    async def _manager(self) -> StreamableHTTPSessionManager:
        loop = asyncio.get_running_loop()
        runner = self._runners.get(loop)
        if runner is None:
            runner = self._runners[loop] = _LoopRunner(loop, self.build_server, self.max_body)
        await runner.ready.wait()
        if runner.failure is not None:
            del self._runners[loop]
            raise RuntimeError("the MCP session manager failed to start") from runner.failure
        return runner.manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if path.startswith(METADATA_PREFIX):
            await self._metadata(scope, send, path[len(METADATA_PREFIX) :])
            return
        match = self.path_re.match(path)
        if match is None:
            await _respond(send, 404, {"error": "not_found", "error_description": "Endpoints are /mcp/<workspace id>/"})
            return
        host = _header(scope, b"host")
        if not _host_allowed(host):
            await _respond(send, 421, {"error": "misdirected", "error_description": "Host is not in ALLOWED_HOSTS"})
            return
        if not _origin_allowed(_header(scope, b"origin"), host or ""):
            await _respond(send, 403, {"error": "forbidden", "error_description": "Origin is not allowed"})
            return
        authorization = _header(scope, b"authorization") or ""
        scheme, _, raw = authorization.partition(" ")
        if scheme.lower() != "bearer" or not raw.strip():
            await self._unauthorized(scope, send, "invalid_request", self.missing_token_text)
            return
        principal = await database_sync_to_async(self.authenticate, thread_sensitive=False)(raw.strip(), match)
        if principal is None:
            await self._unauthorized(scope, send, "invalid_token", self.bad_token_text)
            return
        method = str(scope.get("method", "")).upper()
        if method != "POST":
            # Stateless: no server-to-client stream to GET, no session to DELETE.
            await _respond(
                send,
                405,
                {"error": "method_not_allowed", "error_description": "This endpoint is stateless: POST JSON-RPC"},
                [(b"allow", b"POST")],
            )
            return
        content_type = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
        if content_type not in JSON_TYPES:
            await _respond(
                send,
                415,
                {"error": "unsupported_media_type", "error_description": "Send JSON-RPC as application/json"},
                [(b"accept-post", b"application/json")],
            )
            return
        grant_authenticated_limit(scope)  # a checked token may send a logged-in user's body size
        scope = dict(scope)
        scope[PRINCIPAL_KEY] = principal
        manager = await self._manager()
        await manager.handle_request(scope, receive, send)

    def _metadata_url(self, scope: Scope) -> str:
        return f"{base_url(scope)}{METADATA_PREFIX}{scope.get('path', '')}"

    async def _metadata(self, scope: Scope, send: Send, resource_path: str) -> None:
        if self.path_re.match(resource_path) is None:
            await _respond(send, 404, {"error": "not_found", "error_description": "No such MCP endpoint"})
            return
        if str(scope.get("method", "")).upper() not in ("GET", "HEAD"):
            await _respond(send, 405, {"error": "method_not_allowed"}, [(b"allow", b"GET")])
            return
        # No authorization server: tokens are made by the user in Settings (or manage.py mcp_token), not by
        # an OAuth flow, so a client with a bad token has nothing to log in to and reports the error.
        await _respond(
            send,
            200,
            {
                "resource": f"{base_url(scope)}{resource_path}",
                "resource_name": self.resource_name,
                "authorization_servers": [],
                "bearer_methods_supported": ["header"],
                "resource_documentation": f"{base_url(scope)}/settings/mcp/",
            },
            [(b"cache-control", b"max-age=3600")],
        )

    async def _unauthorized(self, scope: Scope, send: Send, error: str, description: str) -> None:
        metadata = f"{base_url(scope)}{METADATA_PREFIX}{scope.get('path', '')}"
        challenge = (
            f'Bearer realm="mailagent", error="{error}", error_description="{description}", '
            f'resource_metadata="{metadata}"'
        )
        await _respond(
            send, 401, {"error": error, "error_description": description}, [(b"www-authenticate", challenge.encode())]
        )


def _authenticate(raw: str, workspace_id: int) -> selectors.McpPrincipal | None:
    principal = selectors.authenticate_token(raw=raw, workspace_id=workspace_id)
    if principal is not None:
        actions.touch_token(token_id=principal.token_id)
    return principal


def route_mcp(app: Callable[[Any, Any, Any], Awaitable[None]], *endpoints: McpEndpoint) -> ASGIApp:
    """HTTP requests for an endpoint's paths (and its /.well-known metadata) go to it, everything else to
    `app` (Django)."""

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "http":
            path = str(scope.get("path", ""))
            if path.startswith(("/mcp/", METADATA_PREFIX + "/mcp/")):
                for endpoint in endpoints:
                    if endpoint.handles(path):
                        await endpoint(scope, receive, send)
                        return
                await _respond(send, 404, {"error": "not_found", "error_description": "No such MCP endpoint"})
                return
        await app(scope, receive, send)

    return route
