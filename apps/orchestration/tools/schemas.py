"""Every tool's argument schema and description, defined once: the model sees the JSON schema derived
from these pydantic models, and the same models validate what it sends back."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# Free text is bounded: under constrained output (a JSON schema grammar) `maxLength` is enforced while the
# model writes, so a small model cannot ramble past the reply's token limit and leave a cut-off, invalid call.
# Generous for a large model (a report item is a few pages of markdown), far below a context window.
MAX_ITEM_DATA = 12_000
MAX_DESCRIPTION = 1_000
MAX_MESSAGE = 4_000
MAX_SHORT = 300
MAX_ID = 100  # item ids, session ids, slugs
MAX_DATE = 40  # ISO 8601 with a zone offset


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NoArgs(Args):
    pass


class AgentOptions(Args):
    allowTools: bool = Field(True, description="false: the agent answers without calling any tool")
    toolFilter: list[str] | None = Field(None, description="only these of the agent's tools")


class AgentCallArgs(Args):
    input: str = Field(
        ..., min_length=1, max_length=MAX_MESSAGE, description="What you ask the agent to do, with everything it needs"
    )
    sessionId: str | None = Field(
        None, max_length=MAX_ID, description="Continue an earlier conversation with this agent"
    )
    options: AgentOptions | None = None


class WorkspaceAddArgs(Args):
    label: str = Field("", max_length=MAX_SHORT)
    description: str = Field("", max_length=MAX_DESCRIPTION)
    mimeType: str = Field(
        "text/markdown", max_length=100, description="e.g. text/markdown, text/plain, application/json, image/png"
    )
    encoding: Literal["utf8", "base64"] = "utf8"
    data: str = Field("", max_length=MAX_ITEM_DATA, description="The content; base64 when encoding is base64")
    tags: list[str] = Field(default_factory=list, max_length=20)
    path: str | None = Field(
        None, max_length=MAX_SHORT, description="Where inbox_push docs find it, e.g. reports/summary.md (unique)"
    )


class WorkspaceListArgs(Args):
    mimeType: str | None = Field(None, max_length=100)
    tag: str | None = Field(None, max_length=MAX_SHORT)
    includeDeleted: bool = False


class WorkspaceGetArgs(Args):
    id: str = Field(..., max_length=MAX_ID)


class WorkspacePatch(Args):
    label: str | None = Field(None, max_length=MAX_SHORT)
    description: str | None = Field(None, max_length=MAX_DESCRIPTION)
    mimeType: str | None = Field(None, max_length=100)
    encoding: Literal["utf8", "base64"] | None = None
    data: str | None = Field(None, max_length=MAX_ITEM_DATA)
    tags: list[str] | None = Field(None, max_length=20)
    path: str | None = Field(None, max_length=MAX_SHORT, description="New path; empty string removes it")


class WorkspaceUpdateArgs(Args):
    id: str = Field(..., max_length=MAX_ID)
    patch: WorkspacePatch
    expectedRevision: int | None = Field(None, description="Fail instead of overwriting a newer revision")


class WorkspaceRemoveArgs(Args):
    id: str = Field(..., max_length=MAX_ID)
    hardDelete: bool = False


class InboxDoc(Args):
    path: str = Field(..., max_length=MAX_SHORT, description="Path of a live workspace item, e.g. reports/summary.md")


class InboxAsk(Args):
    question: str = Field(..., min_length=1, max_length=2000)
    options: list[str] = Field(default_factory=list, max_length=10, description="Answers the user can click")


class InboxPushArgs(Args):
    docs: list[InboxDoc] | None = Field(None, description="Pointers to workspace items (give them a path first)")
    comments: str = Field(
        "", max_length=MAX_MESSAGE, description="Markdown: what you did, or what you need from the user"
    )
    ask: InboxAsk | None = Field(
        None, description="A decision for the user; their answer comes back to you as a user message"
    )


class MemorySearchArgs(Args):
    scope: Literal["local", "shared", "global"] | None = Field(
        None, description="Only this scope; default: local, then shared, then global"
    )
    owner: str | None = Field(
        None, max_length=MAX_ID, description="Only local memories of this agent (its slug) or 'director'"
    )
    tag: str | None = Field(None, max_length=MAX_SHORT)
    query: str | None = Field(None, max_length=MAX_SHORT, description="Words that must appear in the memory")


class MemoryAddArgs(Args):
    scope: Literal["local", "shared", "global"] = "local"
    content: str = Field(..., min_length=1, max_length=20_000)
    tags: list[str] = Field(default_factory=list)


class MemoryEditArgs(Args):
    id: int
    content: str | None = Field(None, min_length=1, max_length=20_000)
    tags: list[str] | None = None
    scope: Literal["local", "shared", "global"] | None = None


class FilesystemSearchArgs(Args):
    query: str = Field(
        ..., min_length=1, max_length=MAX_SHORT, description="Part of a file name, or words inside text files"
    )
    limit: int = Field(20, ge=1, le=100)


class FilesystemRetrieveArgs(Args):
    # Not bounded here: the tool itself refuses a path over 1024 characters with a clearer message.
    filePath: str = Field(..., min_length=1, description="Path relative to the virtual root, as search returned it")


class DateRange(Args):
    start: str = Field(..., max_length=MAX_DATE, description="ISO 8601 date or datetime")
    end: str = Field(..., max_length=MAX_DATE, description="ISO 8601 date or datetime")


class CalendarReadArgs(Args):
    accountId: int
    dateRange: DateRange


class CalendarEvent(Args):
    title: str = Field(..., min_length=1, max_length=MAX_SHORT)
    start: str = Field(..., max_length=MAX_DATE)
    end: str = Field(..., max_length=MAX_DATE)
    description: str = Field("", max_length=MAX_MESSAGE)
    location: str = Field("", max_length=MAX_SHORT)
    attendees: list[str] = Field(default_factory=list)


class CalendarAddArgs(Args):
    accountId: int
    event: CalendarEvent


class TodoTask(Args):
    title: str = Field(..., min_length=1, max_length=MAX_SHORT)
    notes: str = Field("", max_length=MAX_MESSAGE)
    due: str | None = Field(None, max_length=MAX_DATE, description="ISO 8601 date")


class TodoAddArgs(Args):
    accountId: int
    task: TodoTask


class MailOrganizeArgs(Args):
    action: Literal["read", "unread", "flag", "unflag", "archive", "trash", "move", "tag", "untag"] = Field(
        ..., description="What to do with this run's email on the mail server"
    )
    folder: str = Field("", max_length=512, description="For move: the folder's name, as the mailbox lists it")
    tag: str = Field(
        "",
        max_length=64,
        description="For tag and untag: the tag's name, letters or digits without spaces (e.g. invoices); a label "
        "in Gmail, a category in Outlook, a keyword on IMAP",
    )


class DescribeToolArgs(Args):
    name: str = Field(..., max_length=200, description="A tool's name, as list_tools gives it")


class ValidateToolParamsArgs(Args):
    name: str = Field(..., max_length=200, description="A tool's name, as list_tools gives it")
    params: dict[str, Any] = Field(default_factory=dict, description="The arguments you mean to call it with")


class ReadApiDocsArgs(Args):
    path: str = Field(
        "", max_length=300, description="Only operations whose path starts with this, e.g. /api/workspaces; empty: all"
    )


DESCRIPTIONS: dict[str, tuple[str, type[Args]]] = {
    "list_agents": ("List the agents you can delegate to, with what each does.", NoArgs),
    "list_tools": ("List the tools available to you right now.", NoArgs),
    "describe_tool": (
        "Describe one of your tools: what it does and the full JSON schema of its parameters.",
        DescribeToolArgs,
    ),
    "read_api_docs": (
        "Read the application's JSON API documentation (its OpenAPI operations: method, path, summary, "
        "parameters), optionally only under one path.",
        ReadApiDocsArgs,
    ),
    "validate_tool_params": (
        "Check arguments against a tool's parameter schema without calling it; lists what is wrong.",
        ValidateToolParamsArgs,
    ),
    "workspace_add_item": ("Add an item (a result) to the shared workspace of this email.", WorkspaceAddArgs),
    "workspace_list_items": ("List the workspace items (without their data).", WorkspaceListArgs),
    "workspace_get_item": ("Read one workspace item with its data.", WorkspaceGetArgs),
    "workspace_update_item": (
        "Change a workspace item; pass expectedRevision to avoid lost updates.",
        WorkspaceUpdateArgs,
    ),
    "workspace_remove_item": ("Remove a workspace item (soft unless hardDelete).", WorkspaceRemoveArgs),
    "inbox_push": (
        "Put something in front of the user in their Inbox: finished work (docs pointing at workspace items "
        "with a path), a question you are blocked on (ask: {question, options}; the answer comes back to you "
        "as a user message and the run continues), or a status check-in. Not for intermediate steps, "
        "internal tool calls or scratch work. At least one of docs, comments or ask.",
        InboxPushArgs,
    ),
    "memory_search": ("Search memories: your own first, then shared, then global.", MemorySearchArgs),
    "memory_add": ("Remember something for later runs.", MemoryAddArgs),
    "memory_edit": ("Change a memory you can see.", MemoryEditArgs),
    "filesystem_search": ("Find files in the user's document folder by name or text.", FilesystemSearchArgs),
    "filesystem_retrieve": ("Read a file from the user's document folder (text extracted).", FilesystemRetrieveArgs),
    "calendar_read": ("Read calendar events of a mail account in a date range.", CalendarReadArgs),
    "calendar_add": (
        "Add an event to a mail account's calendar. With attendees it is not created at once: invitations reach "
        "other people, so it waits for the user's approval.",
        CalendarAddArgs,
    ),
    "todo_add": ("Add a task to a mail account's to-do list.", TodoAddArgs),
    "mail_organize": (
        "Propose to mark this run's email read/unread, flag it, archive it, move it to a folder or to Trash, or "
        "tag it (untag) on the mail server. Nothing changes until the user approves it; propose it once.",
        MailOrganizeArgs,
    ),
}
AGENT_TOOL_DESCRIPTION = "Delegate to the agent “{name}”: {summary}"
LIVE_TOOLS = (
    "memory_search",
    "memory_add",
    "memory_edit",
    "filesystem_search",
    "filesystem_retrieve",
    "calendar_read",
    "calendar_add",
    "todo_add",
    "mail_organize",
)
WORKSPACE_TOOLS = (
    "workspace_add_item",
    "workspace_list_items",
    "workspace_get_item",
    "workspace_update_item",
    "workspace_remove_item",
    "inbox_push",
)


def params_summary(model: type[BaseModel]) -> str:
    schema: dict[str, Any] = model.model_json_schema()
    required = set(schema.get("required", []))
    names = [f"{name}{'' if name in required else '?'}" for name in schema.get("properties", {})]
    return ", ".join(names) or "none"
