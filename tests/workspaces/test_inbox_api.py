"""The Inbox HTTP API: stable paging on equal timestamps, filters, owner isolation, read/delete, the DEBUG-only
seed route, item paths and live doc pointers, and the workspace/token commands."""

from __future__ import annotations

import datetime as dt
import json
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from apps.workspaces import actions, selectors
from apps.workspaces.models import InboxEntry, Workspace, WorkspaceToken

pytestmark = pytest.mark.django_db


@pytest.fixture
def other_user(db: Any) -> Any:
    return get_user_model().objects.create_user(username="other", email="other@example.com", password="x" * 20)


def test_250_entries_with_one_timestamp_page_without_duplicates_or_gaps(
    logged_in_client: Any, user: Any, workspace: Any, other_user: Any
) -> None:
    second = actions.create_user_workspace(owner=user, label="Second")
    same = timezone.now().replace(microsecond=123000)
    made = [
        actions.push_inbox_entry(workspace=workspace if n % 2 else second, comments=f"n{n}", created=same)
        for n in range(250)
    ]
    foreign = actions.create_user_workspace(owner=other_user, label="Theirs")
    actions.push_inbox_entry(workspace=foreign, comments="not yours", created=same)

    seen: list[str] = []
    before: str | None = None
    pages = 0
    while True:
        params: dict[str, Any] = {"limit": 37}
        if before:
            params["before"] = before
        page = logged_in_client.get("/api/inbox/history", params).json()
        seen += [e["id"] for e in page["entries"]]
        pages += 1
        before = page["nextBefore"]
        if before is None:
            break
    assert len(seen) == len(set(seen)) == 250 and pages == 7
    assert set(seen) == {str(e.pk) for e in made}  # nothing of the other user's
    assert page["unread"] == 250

    only_first = logged_in_client.get("/api/inbox/history", {"limit": 200, "workspaceId": workspace.pk}).json()
    assert len(only_first["entries"]) == 125
    assert {e["workspaceId"] for e in only_first["entries"]} == {str(workspace.pk)}
    assert logged_in_client.get("/api/inbox/history", {"workspaceId": foreign.pk}).json()["entries"] == []


def test_newest_first_and_timestamp_cursor(logged_in_client: Any, workspace: Any) -> None:
    base = timezone.now().replace(microsecond=0)
    for n in range(3):
        actions.push_inbox_entry(workspace=workspace, comments=f"n{n}", created=base + dt.timedelta(milliseconds=n))
    entries = logged_in_client.get("/api/inbox/history").json()["entries"]
    assert [e["comments"] for e in entries] == ["n2", "n1", "n0"]
    older = logged_in_client.get("/api/inbox/history", {"before": entries[0]["ts"]}).json()["entries"]
    assert [e["comments"] for e in older] == ["n1", "n0"]


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 201}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"before": "yesterday"}, "before must be"),
        ({"before": "1715789012345_not-a-uuid"}, "before must be"),
        ({"workspaceId": "abc"}, "workspaceId"),
    ],
)
def test_bad_history_parameters_are_422_with_a_message(logged_in_client: Any, params: Any, fragment: str) -> None:
    response = logged_in_client.get("/api/inbox/history", params)
    assert response.status_code == 422
    assert fragment in json.dumps(response.json())


def test_read_delete_and_other_users_get_404(
    client: Any, logged_in_client: Any, user: Any, workspace: Any, other_user: Any
) -> None:
    entry = actions.push_inbox_entry(workspace=workspace, comments="hi")
    read = logged_in_client.post(f"/api/inbox/entries/{entry.pk}/read")
    assert read.status_code == 200 and read.json()["entry"]["read"] is True and read.json()["unread"] == 0

    stranger = type(client)()
    stranger.force_login(other_user)
    assert stranger.post(f"/api/inbox/entries/{entry.pk}/read").status_code == 404
    assert stranger.delete(f"/api/inbox/entries/{entry.pk}").status_code == 404
    assert stranger.post(f"/api/inbox/entries/{entry.pk}/reply", {"text": "x"}, "application/json").status_code == 404
    assert InboxEntry.objects.filter(pk=entry.pk).exists()

    assert logged_in_client.delete(f"/api/inbox/entries/{entry.pk}").json()["deleted"] is True
    assert not InboxEntry.objects.filter(pk=entry.pk).exists()
    assert logged_in_client.delete(f"/api/inbox/entries/{entry.pk}").status_code == 404
    assert client.logout() is None and type(client)().get("/api/inbox/history").status_code == 401


def test_seed_only_with_debug(logged_in_client: Any, settings: Any) -> None:
    body = json.dumps({"comments": "UI fixture"})
    settings.DEBUG = False
    assert logged_in_client.post("/api/inbox/seed", body, "application/json").status_code == 404
    settings.DEBUG = True
    created = logged_in_client.post("/api/inbox/seed", body, "application/json")
    assert created.status_code == 201 and created.json()["entry"]["workspaceLabel"] == "Inbox seed"
    bad = logged_in_client.post("/api/inbox/seed", json.dumps({}), "application/json")
    assert bad.status_code == 400 and "at least one of docs" in bad.json()["error"]


def test_item_paths_are_unique_among_live_items_and_pointers_resolve_live(
    logged_in_client: Any, workspace: Any
) -> None:
    base = f"/api/workspaces/{workspace.pk}/items"
    first = logged_in_client.post(base, {"path": "/r/x.md"[1:], "data": "v1"}, "application/json").json()["item"]
    assert first["path"] == "r/x.md"
    clash = logged_in_client.post(base, {"path": "r//x.md", "data": "v2"}, "application/json")
    assert clash.status_code == 400 and "already used" in clash.json()["error"]
    assert logged_in_client.post(base, {"path": "../x", "data": ""}, "application/json").status_code == 400

    entry = actions.push_inbox_entry(workspace=workspace, docs=[{"path": "r/x.md"}], comments="look")
    edited = logged_in_client.put(f"{base}/{first['id']}", {"patch": {"data": "v2 edited"}}, "application/json").json()[
        "item"
    ]
    assert edited["revision"] == 2
    [doc] = selectors.resolve_docs(InboxEntry.objects.get(pk=entry.pk))
    assert doc.item is not None and doc.item.data == "v2 edited"  # a pointer, not a snapshot

    logged_in_client.delete(f"{base}/{first['id']}")
    [gone] = selectors.resolve_docs(entry)
    assert gone.path == "r/x.md" and gone.item is None
    # The path is free again once its item is gone.
    assert logged_in_client.post(base, {"path": "r/x.md", "data": "new"}, "application/json").status_code == 201


def test_workspace_and_token_commands(user: Any) -> None:
    out = StringIO()
    call_command("workspace", "create", "--label", "Claude Desktop", "--owner", user.email, "--json", stdout=out)
    workspace_id = json.loads(out.getvalue())["id"]
    workspace = Workspace.objects.get(pk=workspace_id, owner=user, run_id__isnull=True)
    assert workspace.display_label == "Claude Desktop"

    out = StringIO()
    call_command("mcp_token", str(workspace_id), "--json", stdout=out)
    raw = json.loads(out.getvalue())["token"]
    stored = WorkspaceToken.objects.get(workspace=workspace)
    assert raw not in stored.token_hash and stored.token_hash == actions.hash_token(raw)
    assert selectors.authenticate_token(raw=raw, workspace_id=workspace_id) is not None
    assert selectors.authenticate_token(raw=raw, workspace_id=workspace_id + 1) is None
    call_command("mcp_token", str(workspace_id), "--revoke", str(stored.pk), stdout=StringIO())
    assert selectors.authenticate_token(raw=raw, workspace_id=workspace_id) is None
