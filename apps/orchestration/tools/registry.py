"""Which tools a director or agent has right now, built from the schemas and implementations."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from apps.llm import Tool
from apps.orchestration.tools import calendar, filesystem, inbox, mail, memory, workspace
from apps.orchestration.tools.context import Actor, RunContext
from apps.orchestration.tools.schemas import DESCRIPTIONS, LIVE_TOOLS, WORKSPACE_TOOLS

IMPLEMENTATIONS: dict[str, Callable[[RunContext, Actor, Any], Any]] = {
    "workspace_add_item": workspace.add_item,
    "workspace_list_items": workspace.list_items,
    "workspace_get_item": workspace.get_item,
    "workspace_update_item": workspace.update_item,
    "workspace_remove_item": workspace.remove_item,
    "inbox_push": inbox.push,
    "memory_search": memory.search,
    "memory_add": memory.add,
    "memory_edit": memory.edit,
    "filesystem_search": filesystem.search,
    "filesystem_retrieve": filesystem.retrieve,
    "calendar_read": calendar.calendar_read,
    "calendar_add": calendar.calendar_add,
    "todo_add": calendar.todo_add,
    "mail_organize": mail.mail_organize,
}


def available_live_tools(ctx: RunContext) -> list[str]:
    """Live tools that can work in this run (no virtual root → no filesystem, no calendar account → none)."""
    if "live" not in ctx.cache:
        names = ["memory_search", "memory_add", "memory_edit"]
        root = (ctx.virtual_root or "").strip()  # the owner's directory: tools only while it exists
        if root and Path(root).is_absolute() and Path(root).is_dir():
            names += ["filesystem_search", "filesystem_retrieve"]
        if calendar.tool_accounts(ctx):
            names += ["calendar_read", "calendar_add", "todo_add"]
        if mail.can_organize(ctx):
            names.append("mail_organize")
        ctx.cache["live"] = [name for name in LIVE_TOOLS if name in names]
    return list(ctx.cache["live"])


def build_tool(ctx: RunContext, actor: Actor, name: str) -> Tool:
    description, arguments = DESCRIPTIONS[name]
    implementation = IMPLEMENTATIONS[name]
    if name in ("calendar_read", "calendar_add", "todo_add"):
        accounts = ", ".join(f"{a.pk} = {a.name} ({a.provider})" for a in calendar.tool_accounts(ctx))
        description = f"{description} Accounts: {accounts}."
    return Tool(name, description, arguments, lambda args: implementation(ctx, actor, args))


def common_tools(ctx: RunContext, actor: Actor, live: list[str]) -> list[Tool]:
    return [build_tool(ctx, actor, name) for name in (*WORKSPACE_TOOLS, *live)]
