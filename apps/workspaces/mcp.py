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
"""

from __future__ import annotations

import asyncio
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
from pydantic import BaseModel, ConfigDict, Field, StrictStr

from apps.workspaces import actions, selectors
from apps.workspaces.models import CreatedBy, EntrySource, Workspace
from mailagent.request_limits import grant_authenticated_limit

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PATH_RE = re.compile(r"^/mcp/(?P<workspace_id>[0-9]{1,18})/?$")
PRINCIPAL_KEY = "mailagent.mcp_principal"
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


class DocPointer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: StrictStr = Field(..., description="Path of a live item of this workspace, e.g. reports/summary.md")


class ItemPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: StrictStr | None = None
    description: StrictStr | None = None
    mimeType: StrictStr | None = None
    encoding: Literal["utf8", "base64"] | None = None
    data: StrictStr | None = None
    tags: list[StrictStr] | None = None
    path: StrictStr | None = Field(None, description="New path; empty string removes it")


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
    return database_sync_to_async(fn)(*args)


def build_server() -> MCPServer:
    server: MCPServer = MCPServer(
        "mailagent-workspace",
        instructions=(
            "A mailagent workspace: keep your work products here as items (give the ones you want to show the "
            "user a path), and use inbox_push to put finished work or a question in front of the user."
        ),
        warn_on_duplicate_tools=False,
    )

    @server.tool(name="workspace_add_item", description="Add an item (a document, note, image…) to this workspace.")
    async def workspace_add_item(
        ctx: Context,
        data: Annotated[StrictStr, Field(description="The content; base64 when encoding is base64")] = "",
        label: Annotated[StrictStr, Field(max_length=300)] = "",
        description: StrictStr = "",
        mimeType: Annotated[StrictStr, Field(description="text/markdown, text/plain, application/json, image/png…")] = (
            "text/markdown"
        ),
        encoding: Literal["utf8", "base64"] = "utf8",
        tags: list[StrictStr] | None = None,
        path: Annotated[
            StrictStr | None, Field(description="Where inbox_push docs find it, e.g. reports/summary.md (unique)")
        ] = None,
    ) -> dict[str, Any]:
        fields = {
            "data": data,
            "label": label,
            "description": description,
            "mime_type": mimeType,
            "encoding": encoding,
            "tags": tags or [],
            "path": path,
        }
        return await _call(_add_item, _principal(ctx), fields)

    @server.tool(name="workspace_list_items", description="List this workspace's items (without their data).")
    async def workspace_list_items(
        ctx: Context,
        mimeType: Annotated[StrictStr | None, Field(description="e.g. text/markdown or image/*")] = None,
        tag: StrictStr | None = None,
        includeDeleted: bool = False,
    ) -> dict[str, Any]:
        return await _call(_list_items, _principal(ctx), mimeType, tag, includeDeleted)

    @server.tool(name="workspace_get_item", description="Read one item with its data, by id or by path.")
    async def workspace_get_item(ctx: Context, id: StrictStr | None = None, path: StrictStr | None = None) -> Any:
        return await _call(_get_item, _principal(ctx), id, path)

    @server.tool(
        name="workspace_update_item",
        description="Change an item (by id or path); pass expectedRevision to avoid overwriting a newer revision.",
    )
    async def workspace_update_item(
        ctx: Context,
        patch: ItemPatch,
        id: StrictStr | None = None,
        path: StrictStr | None = None,
        expectedRevision: int | None = None,
    ) -> dict[str, Any]:
        return await _call(_update_item, _principal(ctx), id, path, patch, expectedRevision)

    @server.tool(name="workspace_remove_item", description="Remove an item (soft unless hardDelete), by id or path.")
    async def workspace_remove_item(
        ctx: Context, id: StrictStr | None = None, path: StrictStr | None = None, hardDelete: bool = False
    ) -> dict[str, Any]:
        return await _call(_remove_item, _principal(ctx), id, path, hardDelete)

    @server.tool(name="inbox_push", description=INBOX_PUSH_DESCRIPTION)
    async def inbox_push(
        ctx: Context,
        docs: Annotated[
            list[DocPointer] | None, Field(description="Pointers to items of this workspace: [{path}]")
        ] = None,
        comments: Annotated[StrictStr, Field(description="Markdown: what you did or what you ask")] = "",
    ) -> dict[str, Any]:
        return await _call(_inbox_push, _principal(ctx), docs, comments)

    return server


class _LoopRunner:
    """One MCP server and its session manager, running for the life of one event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.server = build_server()
        self.server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            max_request_body_size=MAX_BODY_BYTES,
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


class McpEndpoint:
    """The ASGI app for /mcp/<workspace_id>/: host/origin checks, bearer-token auth, then the SDK."""

    def __init__(self) -> None:
        self._runners: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopRunner] = weakref.WeakKeyDictionary()

    async def _manager(self) -> StreamableHTTPSessionManager:
        loop = asyncio.get_running_loop()
        runner = self._runners.get(loop)
        if runner is None:
            runner = self._runners[loop] = _LoopRunner(loop)
        await runner.ready.wait()
        if runner.failure is not None:
            del self._runners[loop]
            raise RuntimeError("the MCP session manager failed to start") from runner.failure
        return runner.manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = PATH_RE.match(scope.get("path", ""))
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
        workspace_id = int(match["workspace_id"])
        authorization = _header(scope, b"authorization") or ""
        scheme, _, raw = authorization.partition(" ")
        if scheme.lower() != "bearer" or not raw.strip():
            await self._unauthorized(send, "invalid_request", "A workspace token is required (Authorization: Bearer)")
            return
        principal = await database_sync_to_async(_authenticate)(raw.strip(), workspace_id)
        if principal is None:
            await self._unauthorized(
                send, "invalid_token", "The token is unknown, revoked, or was issued for another workspace"
            )
            return
        grant_authenticated_limit(scope)  # a checked token may send a logged-in user's body size
        scope = dict(scope)
        scope[PRINCIPAL_KEY] = principal
        manager = await self._manager()
        await manager.handle_request(scope, receive, send)

    @staticmethod
    async def _unauthorized(send: Send, error: str, description: str) -> None:
        challenge = f'Bearer realm="mailagent", error="{error}", error_description="{description}"'
        await _respond(
            send, 401, {"error": error, "error_description": description}, [(b"www-authenticate", challenge.encode())]
        )


def _authenticate(raw: str, workspace_id: int) -> selectors.McpPrincipal | None:
    principal = selectors.authenticate_token(raw=raw, workspace_id=workspace_id)
    if principal is not None:
        actions.touch_token(token_id=principal.token_id)
    return principal


def with_mcp(app: Callable[[Any, Any, Any], Awaitable[None]]) -> ASGIApp:
    """HTTP requests under /mcp/ go to the MCP endpoint, everything else to `app` (Django)."""
    endpoint = McpEndpoint()

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "http" and str(scope.get("path", "")).startswith("/mcp/"):
            await endpoint(scope, receive, send)
        else:
            await app(scope, receive, send)

    return route
