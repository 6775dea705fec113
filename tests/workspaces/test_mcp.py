"""The MCP endpoint through the real `mcp` SDK client (streamable HTTP) against live servers on 127.0.0.1:
tools, pushes that show in /api/inbox/history, forgery and authentication, bad input."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
import pytest
from django.contrib.auth import get_user_model
from django.test import Client as DjangoClient

from apps.workspaces import actions
from apps.workspaces.models import InboxEntry, WorkspaceToken
from tests.workspaces.mcp_client import tool_text, workspace_client

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = {
    "workspace_add_item",
    "workspace_list_items",
    "workspace_get_item",
    "workspace_update_item",
    "workspace_remove_item",
    "inbox_push",
}


def history(user: Any, **params: Any) -> dict[str, Any]:
    client = DjangoClient()
    client.force_login(user)
    response = client.get("/api/inbox/history", params)
    assert response.status_code == 200, response.content
    return dict(response.json())


def test_client_lists_tools_pushes_docs_and_comments_and_history_shows_the_entry(
    live_server_url: str, user: Any, workspace: Any
) -> None:
    _, token = actions.issue_token(workspace=workspace, name="test")

    async def session() -> tuple[Any, Any, Any]:
        async with workspace_client(live_server_url, workspace.pk, token) as client:
            tools = await client.list_tools()
            added = await client.call_tool(
                "workspace_add_item",
                {"path": "reports/summary.md", "label": "Summary", "mimeType": "text/markdown", "data": "# Q3\nUp."},
            )
            pushed = await client.call_tool(
                "inbox_push", {"docs": [{"path": "reports/summary.md"}], "comments": "Drafted the **Q3** summary."}
            )
            return tools, added, pushed

    tools, added, pushed = asyncio.run(session())
    by_name = {tool.name: tool for tool in tools.tools}
    assert set(by_name) == TOOLS
    push_schema = by_name["inbox_push"].input_schema
    assert set(push_schema["properties"]) == {"docs", "comments"}  # no workspace argument to forge
    assert "Do not push internal tool calls" in (by_name["inbox_push"].description or "")
    assert not added.is_error and json.loads(tool_text(added))["item"]["path"] == "reports/summary.md"
    assert not pushed.is_error, tool_text(pushed)
    entry_id = json.loads(tool_text(pushed))["entryId"]

    page = history(user)
    assert [e["id"] for e in page["entries"]] == [entry_id]
    entry = page["entries"][0]
    assert entry["workspaceId"] == str(workspace.pk) and entry["workspaceLabel"] == "Research desk"
    assert entry["docs"] == [{"path": "reports/summary.md"}] and entry["comments"] == "Drafted the **Q3** summary."
    assert entry["read"] is False and page["unread"] == 1
    assert WorkspaceToken.objects.get(workspace=workspace).last_used_at is not None


def test_forgery_and_authentication(live_server_url: str, user: Any, workspace: Any) -> None:
    other = actions.create_user_workspace(owner=user, label="Other desk")
    _, token_a = actions.issue_token(workspace=workspace)
    token_b, raw_b = actions.issue_token(workspace=other)

    async def forge() -> Any:
        async with workspace_client(live_server_url, workspace.pk, token_a) as client:
            return await client.call_tool("inbox_push", {"comments": "hello", "workspaceId": str(other.pk)})

    forged = asyncio.run(forge())
    assert not forged.is_error
    assert list(InboxEntry.objects.values_list("workspace_id", flat=True)) == [workspace.pk]  # the URL's, not B

    def post(workspace_id: int, token: str | None, **extra: Any) -> httpx2.Response:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream", **extra}
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        return httpx2.post(f"{live_server_url}/mcp/{workspace_id}/", json=body, headers=headers, timeout=30)

    assert post(other.pk, raw_b).status_code != 401  # B's token works at B
    for workspace_id, token in ((other.pk, token_a), (workspace.pk, None), (workspace.pk, "mcpws_wrong")):
        refused = post(workspace_id, token)
        assert refused.status_code == 401, (workspace_id, token, refused.text)
        assert refused.headers["www-authenticate"].startswith('Bearer realm="mailagent"')
    actions.revoke_token(token=token_b)
    revoked = post(other.pk, raw_b)
    assert revoked.status_code == 401 and 'error="invalid_token"' in revoked.headers["www-authenticate"]

    # A logged-in browser session is not enough.
    browser = DjangoClient()
    browser.force_login(user)
    cookie = f"sessionid={browser.cookies['sessionid'].value}"
    assert post(workspace.pk, None, cookie=cookie).status_code == 401

    # The real client reports the refusal instead of hanging.
    async def wrong_token() -> None:
        async with workspace_client(live_server_url, other.pk, token_a) as client:
            await client.list_tools()

    with pytest.raises(BaseException):  # noqa: B017 -- the SDK raises an exception group around the 401
        asyncio.run(wrong_token())
    assert InboxEntry.objects.count() == 1


def test_bad_input_is_a_clear_tool_error_and_stores_nothing(live_server_url: str, user: Any, workspace: Any) -> None:
    _, token = actions.issue_token(workspace=workspace)
    actions.add_item(workspace=workspace, data="x", path="notes/a.md")
    deleted = actions.add_item(workspace=workspace, data="y", path="notes/gone.md")
    actions.remove_item(item_id=deleted.pk, workspace=workspace, hard=False, actor={})
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "at least one of docs"),
        ({"comments": "   "}, "at least one of docs"),
        ({"docs": []}, "at least one of docs"),
        ({"docs": [{"path": "notes/missing.md"}]}, "no live item with path 'notes/missing.md'"),
        ({"docs": [{"path": "notes/gone.md"}], "comments": "see"}, "no live item with path 'notes/gone.md'"),
        ({"docs": [{"path": "../etc/passwd"}]}, "must not contain '.' or '..'"),
        ({"comments": "x" * (64 * 1024 + 1)}, "at most 65536 characters"),  # the limit the schema declares
        ({"comments": "é" * (32 * 1024 + 1)}, "the limit is 65536"),  # fewer characters, more bytes
        ({"docs": [{"path": "notes/a.md"}] * 51}, "at most 50 items"),
        ({"comments": 5}, "Input should be a valid string"),
        ({"comments": ["a"]}, "Input should be a valid string"),
        ({"docs": [{"path": 7}]}, "Input should be a valid string"),
        ({"docs": "notes/a.md"}, "docs"),
        ({"docs": [{"path": "notes/a.md", "extra": 1}]}, "Extra inputs are not permitted"),
        # Refused on both databases alike (PostgreSQL cannot store NUL), naming the argument.
        ({"comments": "see\x00this"}, "comments: text cannot contain the NUL character (U+0000)"),
        ({"docs": [{"path": "notes/a\x00.md"}]}, "docs.0.path: text cannot contain the NUL character"),
    ]

    async def calls() -> list[Any]:
        async with workspace_client(live_server_url, workspace.pk, token) as client:
            return [await client.call_tool("inbox_push", arguments) for arguments, _ in cases]

    results = asyncio.run(calls())
    for (arguments, expected), result in zip(cases, results, strict=True):
        assert result.is_error, arguments
        assert expected in tool_text(result), (arguments, tool_text(result))
    assert InboxEntry.objects.count() == 0
    assert get_user_model().objects.count() == 1


def test_protocol_declares_its_inputs_limits_and_outputs_and_answers_edges_per_spec(
    live_server_url: str, user: Any, workspace: Any
) -> None:
    _, token = actions.issue_token(workspace=workspace)
    actions.add_item(workspace=workspace, data="# Notes", path="notes/a.md", label="Notes")

    async def session() -> tuple[Any, Any, Any]:
        async with workspace_client(live_server_url, workspace.pk, token) as client:
            tools = await client.list_tools()
            got = await client.call_tool("workspace_get_item", {"path": "notes/a.md"})
            return tools, got, client.server_info

    tools, got, info = asyncio.run(session())
    assert info is not None and info.version  # serverInfo.version
    for tool in tools.tools:
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
        assert tool.output_schema and tool.output_schema.get("properties"), tool.name
    push = {tool.name: tool for tool in tools.tools}["inbox_push"].input_schema["properties"]
    assert push["comments"]["maxLength"] == 65536
    assert any(option.get("maxItems") == 50 for option in push["docs"].get("anyOf", [push["docs"]]))
    assert (
        got.structured_content["item"]["data"] == "# Notes" and got.structured_content["item"]["path"] == "notes/a.md"
    )

    url = f"{live_server_url}/mcp/{workspace.pk}/"
    headers = {"authorization": f"Bearer {token}", "accept": "application/json, text/event-stream"}
    unknown = httpx2.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "nope", "arguments": {}}},
        headers=headers,
    )
    assert unknown.json()["error"]["code"] == -32602
    assert httpx2.get(url, headers=headers).status_code == 405  # stateless: no event stream to hold open
    wrong = httpx2.post(url, content=b"{}", headers={**headers, "content-type": "text/plain"})
    assert wrong.status_code == 415
    metadata_url = f"{live_server_url}/.well-known/oauth-protected-resource/mcp/{workspace.pk}/"
    assert httpx2.get(metadata_url).json()["resource"] == url
    refused = httpx2.post(url, json={}, headers={"authorization": "Bearer mcpws_wrong"})
    assert refused.status_code == 401
    assert f'resource_metadata="{metadata_url}"' in refused.headers["www-authenticate"]
