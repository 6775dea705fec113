"""The mailbox MCP endpoint, /mcp/mailbox/, on the official `mcp` SDK (the same endpoint machinery as the
workspace endpoint: apps/workspaces/mcp.py).

Whose mailbox comes from the bearer token only (a mailbox token made in Settings → MCP tokens or with
`manage.py mcp_token --mailbox`): no tool has a user or account-owner argument. Each tool needs a scope:
`read` (search, read, ask), `draft` (create_draft) or `act` (request_send, request_action: they create
approvals in the user's Inbox; nothing reaches other people or the mail server until the user approves).
Every call is checked against the token's scopes and per-minute budget and recorded in the audit ledger
(apps.workspaces McpCall: the ids it named, never query or body text)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Annotated, Any, Literal

from channels.db import database_sync_to_async
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, InputRequiredResult
from pydantic import Field, StrictInt, StrictStr

from apps.ask.runner import run_on_loop
from apps.mcpserver import schemas, tools
from apps.workspaces import actions as workspace_actions
from apps.workspaces import selectors as workspace_selectors
from apps.workspaces.mcp import PRINCIPAL_KEY, McpEndpoint, StrictMCPServer, route_mcp, server_version
from apps.workspaces.selectors import MailboxPrincipal

PATH_RE = re.compile(r"^/mcp/mailbox/?$")
MAX_BODY_BYTES = 512 * 1024
SEARCH_SYNTAX = (
    'Words, "phrases", -excluded words and operators: from: to: cc: subject: has:attachment filename: '
    "is:unread|read|starred in:<folder> account:<name> before:/after:/date:YYYY-MM-DD"
)

READ, DRAFT, ACT = "read", "draft", "act"
TOOL_SCOPES = {
    "search_mail": READ,
    "read_message": READ,
    "read_thread": READ,
    "list_folders": READ,
    "get_attachment_text": READ,
    "search_files": READ,
    "read_file_text": READ,
    "ask": READ,
    "list_drafts": READ,
    "approval_status": READ,
    "create_draft": DRAFT,
    "request_send": ACT,
    "request_action": ACT,
}
ID_ARGUMENTS = ("message_id", "thread_id", "attachment_id", "file_id", "draft_id", "approval_id", "conversation_id")

Id = Annotated[StrictInt, Field(ge=1, le=2**62)]
Limit = Annotated[int, Field(ge=1, le=50, description="Results per page (1 to 50)")]
Cursor = Annotated[
    StrictStr | None, Field(max_length=10, description="next_cursor of the previous page; omit for the first page")
]


def principal_of(ctx: Context[Any, Any]) -> MailboxPrincipal:
    request = ctx.request_context.request
    principal = getattr(request, "scope", {}).get(PRINCIPAL_KEY)
    if not isinstance(principal, MailboxPrincipal):  # only reachable if mounted without MailboxEndpoint
        raise ToolError("this request is not authenticated for a mailbox")
    return principal


def _argument_ids(arguments: dict[str, Any]) -> dict[str, Any]:
    """The ids a call named, for the audit ledger (never the query, question or body text)."""
    kept: dict[str, Any] = {}
    for key in ID_ARGUMENTS:
        value = arguments.get(key)
        if isinstance(value, int | str) and value != "":
            kept[key] = value if isinstance(value, int) else str(value)[:64]
    ids = arguments.get("message_ids")
    if isinstance(ids, list):
        kept["message_ids"] = [v for v in ids[:100] if isinstance(v, int)]
    if isinstance(arguments.get("kind"), str):
        kept["kind"] = arguments["kind"][:20]
    return kept


def _size(result: CallToolResult | InputRequiredResult) -> int:
    if not isinstance(result, CallToolResult):
        return 0
    if result.structured_content is not None:
        return len(json.dumps(result.structured_content, ensure_ascii=False).encode())
    return sum(len(getattr(block, "text", "").encode()) for block in result.content)


class MailboxServer(StrictMCPServer):
    """Scope check, per-token rate limit and the audit ledger around every known tool."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        if self._tool_manager.get_tool(name) is None or context is None:
            return await super().call_tool(name, arguments, context)
        principal = principal_of(context)
        started = time.monotonic()
        ok, error, size = False, "", 0
        try:
            needed = TOOL_SCOPES[name]
            if needed not in principal.scopes:
                raise ToolError(
                    f"this token does not have the '{needed}' scope that {name} needs (it has "
                    f"{', '.join(sorted(principal.scopes))}); the user can make one with it in Settings → MCP tokens"
                )
            wait = await database_sync_to_async(workspace_actions.take_call_slot, thread_sensitive=False)(
                token_id=principal.token_id, calls_per_minute=principal.calls_per_minute
            )
            if wait:
                raise ToolError(
                    f"429 Too Many Requests: this token may make {principal.calls_per_minute} calls a minute; "
                    f"Retry-After: {wait} seconds"
                )
            result = await super().call_tool(name, arguments, context)
            ok = not (isinstance(result, CallToolResult) and result.is_error)
            size = _size(result)
            return result
        except ToolError as exc:
            error = str(exc)
            raise
        except Exception as exc:
            error = f"{type(exc).__name__}"
            raise
        finally:
            await database_sync_to_async(workspace_actions.record_mcp_call, thread_sensitive=False)(
                token_id=principal.token_id,
                owner_id=principal.owner_id,
                tool=name,
                argument_ids=_argument_ids(arguments),
                ok=ok,
                error=error,
                result_bytes=size,
                duration_ms=int((time.monotonic() - started) * 1000),
            )


async def _run[T](ctx: Context[Any, Any], fn: Callable[..., T], *args: Any) -> T:
    # Not thread-sensitive: concurrent clients' reads and Ask runs go side by side instead of queueing on the
    # one thread Django's sync code shares (each worker thread opens its own database connection).
    result: T = await database_sync_to_async(fn, thread_sensitive=False)(principal_of(ctx), *args)
    return result


def build_server() -> MCPServer:
    server = MailboxServer(
        "mailagent-mailbox",
        version=server_version(),
        instructions=(
            "The user's own mailbox and file library in mailagent. Search with search_mail (operators like "
            "from: is:unread date:), read with read_thread/read_message, ask questions over the mail with ask. "
            "You can write drafts (create_draft; they wait in the user's Drafts page) and ask for a send or a "
            "change on the mail server (request_send, request_action): those create an approval in the user's "
            "Inbox and happen only if the user approves; check with approval_status."
        ),
        warn_on_duplicate_tools=False,
    )

    @server.tool(
        name="search_mail",
        description="Search the user's mail (scope read). One result per thread: its best matching message. "
        "Syntax: " + SEARCH_SYNTAX + ".",
    )
    async def search_mail(
        ctx: Context[Any, Any],
        query: Annotated[StrictStr, Field(min_length=1, max_length=1000, description=SEARCH_SYNTAX)],
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> schemas.SearchMailResult:
        return await _run(ctx, tools.search_mail, query, limit, cursor)

    @server.tool(name="read_message", description="Read one message as text, quoted history apart (scope read).")
    async def read_message(
        ctx: Context[Any, Any], message_id: Annotated[Id, Field(description="A message_id from search_mail")]
    ) -> schemas.MessageOut:
        return await _run(ctx, tools.read_message, message_id)

    @server.tool(
        name="read_thread",
        description="Read a whole conversation, oldest first, each message's own text apart from the quoted "
        "history it repeats (scope read).",
    )
    async def read_thread(
        ctx: Context[Any, Any], thread_id: Annotated[Id, Field(description="A thread_id from search_mail")]
    ) -> schemas.ThreadOut:
        return await _run(ctx, tools.read_thread, thread_id)

    @server.tool(name="list_folders", description="The user's accounts and their folders with counts (scope read).")
    async def list_folders(ctx: Context[Any, Any]) -> schemas.FoldersResult:
        return await _run(ctx, tools.list_folders)

    @server.tool(
        name="get_attachment_text",
        description="The text of an attachment (PDF, Office, HTML, text…), extracted on first use (scope read).",
    )
    async def get_attachment_text(
        ctx: Context[Any, Any],
        message_id: Annotated[Id, Field(description="The message the attachment belongs to")],
        attachment_id: Annotated[Id, Field(description="An attachment_id from read_message or read_thread")],
    ) -> schemas.AttachmentText:
        return await _run(ctx, tools.get_attachment_text, message_id, attachment_id)

    @server.tool(name="search_files", description="Search the user's file library (scope read).")
    async def search_files(
        ctx: Context[Any, Any],
        query: Annotated[
            StrictStr, Field(min_length=1, max_length=1000, description='Words, "phrases", filename:, date:')
        ],
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> schemas.SearchFilesResult:
        return await _run(ctx, tools.search_files, query, limit, cursor)

    @server.tool(name="read_file_text", description="The text of a library file (scope read).")
    async def read_file_text(
        ctx: Context[Any, Any], file_id: Annotated[Id, Field(description="A file_id from search_files")]
    ) -> schemas.FileText:
        return await _run(ctx, tools.read_file_text, file_id)

    @server.tool(
        name="ask",
        description="Ask a question about the user's mail; the answer comes with the messages it rests on "
        "(scope read). Takes a few seconds.",
    )
    async def ask(
        ctx: Context[Any, Any],
        question: Annotated[StrictStr, Field(min_length=1, max_length=2000, description="The question, as asked")],
        conversation_id: Annotated[
            StrictStr | None,
            Field(max_length=64, description="conversation_id of an earlier answer, to ask a follow-up"),
        ] = None,
    ) -> schemas.AskResult:
        run_id = await _run(ctx, tools.start_ask, question, conversation_id)
        await run_on_loop(run_id)  # the Ask runner: its concurrency bound, progress on the run's websocket group
        return await _run(ctx, tools.ask_result, run_id)

    @server.tool(
        name="create_draft",
        description="Write a draft (scope draft): a reply in a thread (to defaults to the sender) or a new "
        "email to `to`. It is only saved in the user's Drafts page; nothing is sent (see request_send).",
    )
    async def create_draft(
        ctx: Context[Any, Any],
        body: Annotated[StrictStr, Field(min_length=1, max_length=100_000, description="Plain text")],
        thread_id: Annotated[Id | None, Field(description="Reply in this thread (to its latest message)")] = None,
        to: Annotated[
            list[Annotated[StrictStr, Field(max_length=320)]],
            Field(max_length=50, description='Recipients: "Name <a@example.com>" or a@example.com'),
        ] = [],  # noqa: B006 -- pydantic copies defaults
        cc: Annotated[
            list[Annotated[StrictStr, Field(max_length=320)]], Field(max_length=50, description="Cc recipients")
        ] = [],  # noqa: B006
        subject: Annotated[
            StrictStr, Field(max_length=998, description="Defaults to Re: <thread subject> for a reply")
        ] = "",
        account: Annotated[
            StrictStr | None,
            Field(max_length=320, description="Account to send from (name or address) for a new email"),
        ] = None,
    ) -> schemas.DraftOut:
        return await _run(ctx, tools.create_draft, thread_id, to, cc, subject, body, account)

    @server.tool(name="list_drafts", description="The user's drafts, open ones first (scope read).")
    async def list_drafts(
        ctx: Context[Any, Any], limit: Annotated[int, Field(ge=1, le=200, description="At most this many")] = 50
    ) -> schemas.DraftsResult:
        return await _run(ctx, tools.list_drafts, limit)

    @server.tool(
        name="request_send",
        description="Ask the user to approve sending a draft (scope act). Creates an approval in their Inbox and "
        "returns it; nothing is sent unless they approve. Poll approval_status.",
    )
    async def request_send(
        ctx: Context[Any, Any], draft_id: Annotated[Id, Field(description="A draft_id from create_draft")]
    ) -> schemas.ApprovalOut:
        return await _run(ctx, tools.request_send, draft_id)

    @server.tool(
        name="request_action",
        description="Ask the user to approve a change on the mail server (scope act): mark read/unread, flag, "
        "archive, trash, move, or tag/untag. One approval per account; nothing changes unless the user approves.",
    )
    async def request_action(
        ctx: Context[Any, Any],
        kind: Annotated[
            Literal["read", "unread", "flag", "unflag", "archive", "trash", "move", "tag", "untag"],
            Field(description="The change"),
        ],
        message_ids: Annotated[list[Id], Field(min_length=1, max_length=100, description="Messages to change")],
        folder: Annotated[
            StrictStr | None, Field(max_length=512, description="For move: the target folder's name (list_folders)")
        ] = None,
        tag: Annotated[
            StrictStr | None,
            Field(
                max_length=64,
                description="For tag and untag: the tag's name, letters or digits without spaces (e.g. invoices); "
                "a label in Gmail, a category in Outlook, a keyword on IMAP",
            ),
        ] = None,
    ) -> schemas.ActionRequested:
        return await _run(ctx, tools.request_action, kind, message_ids, folder, tag)

    @server.tool(
        name="approval_status",
        description="Where an approval stands: pending, done, failed or rejected (scope read).",
    )
    async def approval_status(
        ctx: Context[Any, Any],
        approval_id: Annotated[Id, Field(description="An approval_id from request_send or request_action")],
    ) -> schemas.ApprovalOut:
        return await _run(ctx, tools.approval_status, approval_id)

    return server


class MailboxEndpoint(McpEndpoint):
    """/mcp/mailbox/: a mailbox token (scoped, revocable, expiring) instead of a workspace token."""

    path_re = PATH_RE
    max_body = MAX_BODY_BYTES
    resource_name = "mailagent mailbox"
    missing_token_text = "A mailbox token is required (Authorization: Bearer; Settings → MCP tokens)"  # noqa: S105
    bad_token_text = "The token is unknown, revoked or expired"  # noqa: S105

    def build_server(self) -> MCPServer:
        return build_server()

    def authenticate(self, raw: str, match: re.Match[str]) -> MailboxPrincipal | None:
        principal = workspace_selectors.authenticate_mailbox_token(raw=raw)
        if principal is not None:
            workspace_actions.touch_mailbox_token(token_id=principal.token_id)
        return principal


def with_mcp(app: Callable[[Any, Any, Any], Any]) -> Callable[[Any, Any, Any], Any]:
    """Both MCP endpoints in front of Django: /mcp/mailbox/ and /mcp/<workspace id>/ (with their metadata)."""
    return route_mcp(app, MailboxEndpoint(), McpEndpoint())
