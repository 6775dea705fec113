"""Workspaces REST API: items, filters and paging, revision conflicts (409), soft and hard deletes, access."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from apps.workspaces import actions
from apps.workspaces.models import WorkspaceItemLog

pytestmark = pytest.mark.django_db


@pytest.fixture
def workspace(user: Any) -> Any:
    return actions.open_workspace(
        owner=user, run_id=None, message_id=None, director_id=None, director_name="Manual", title="Scratch"
    )


def post(client: Any, url: str, data: dict[str, Any]) -> Any:
    return client.post(url, data=json.dumps(data), content_type="application/json")


def put(client: Any, url: str, data: dict[str, Any]) -> Any:
    return client.put(url, data=json.dumps(data), content_type="application/json")


def test_add_list_get_filter_and_page(logged_in_client: Any, workspace: Any) -> None:
    base = f"/api/workspaces/{workspace.pk}/items"
    created = post(
        logged_in_client, base, {"label": "Draft", "mimeType": "text/markdown", "data": "# Hi", "tags": ["draft"]}
    )
    assert created.status_code == 201
    item = created.json()["item"]
    assert item["revision"] == 1 and item["context"]["createdBy"] == "user" and item["encoding"] == "utf8"
    png = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
    post(logged_in_client, base, {"label": "Chart", "mimeType": "image/png", "encoding": "base64", "data": png})
    for n in range(3):
        post(logged_in_client, base, {"label": f"note {n}", "data": str(n), "tags": ["note"]})

    everything = logged_in_client.get(base).json()
    assert everything["total"] == 5 and [i["label"] for i in everything["items"]][:2] == ["Draft", "Chart"]
    assert [i["label"] for i in logged_in_client.get(base, {"mimeType": "image/*"}).json()["items"]] == ["Chart"]
    assert [i["label"] for i in logged_in_client.get(base, {"tag": "draft"}).json()["items"]] == ["Draft"]
    assert logged_in_client.get(base, {"author": "director"}).json()["total"] == 0
    page = logged_in_client.get(base, {"offset": 2, "limit": 2}).json()
    assert [i["label"] for i in page["items"]] == ["note 0", "note 1"] and page["total"] == 5

    one = logged_in_client.get(f"{base}/{item['id']}").json()["item"]
    assert one["data"] == "# Hi"
    bad = post(logged_in_client, base, {"encoding": "base64", "data": "not base64!!"})
    assert bad.status_code == 400 and bad.json()["error"] == "data is not valid base64"


def test_stale_revision_is_a_409_with_the_current_revision(logged_in_client: Any, workspace: Any) -> None:
    base = f"/api/workspaces/{workspace.pk}/items"
    item = post(logged_in_client, base, {"label": "Draft", "data": "v1"}).json()["item"]
    url = f"{base}/{item['id']}"
    first = put(logged_in_client, url, {"patch": {"data": "v2"}, "expectedRevision": 1})
    assert first.status_code == 200 and first.json()["item"]["revision"] == 2
    stale = put(logged_in_client, url, {"patch": {"data": "v2-from-someone-else"}, "expectedRevision": 1})
    assert stale.status_code == 409
    assert stale.json()["currentRevision"] == 2 and stale.json()["item"]["data"] == "v2"
    assert logged_in_client.get(url).json()["item"]["data"] == "v2"
    unknown = put(logged_in_client, url, {"patch": {"owner": "me"}})
    assert unknown.status_code == 400


def test_soft_delete_then_hard_delete_and_the_log(logged_in_client: Any, workspace: Any) -> None:
    base = f"/api/workspaces/{workspace.pk}/items"
    item = post(logged_in_client, base, {"label": "Temp", "data": "x"}).json()["item"]
    url = f"{base}/{item['id']}"
    assert logged_in_client.delete(url).json() == {"removed": True, "hard": False}
    assert logged_in_client.get(base).json()["total"] == 0
    listed = logged_in_client.get(base, {"includeDeleted": "true"}).json()["items"]
    assert listed[0]["deleted"] is True and listed[0]["revision"] == 2
    assert logged_in_client.delete(f"{url}?hard=true").json() == {"removed": True, "hard": True}
    assert logged_in_client.get(url).status_code == 404
    actions_logged = list(WorkspaceItemLog.objects.filter(workspace=workspace).values_list("action", flat=True))
    assert actions_logged == ["add", "remove", "hard_delete"]


def test_other_users_and_anonymous_are_refused(client: Any, django_user_model: Any, workspace: Any) -> None:
    url = f"/api/workspaces/{workspace.pk}/items"
    assert client.get(url).status_code == 401
    other = django_user_model.objects.create_user(username="eve", email="eve@example.com", password="x")
    client.force_login(other)
    assert client.get(url).status_code == 404
    assert post(client, url, {"data": "x"}).status_code == 404


def test_oversized_items_are_refused(workspace: Any, settings: Any) -> None:
    with pytest.raises(actions.WorkspaceError, match="the limit is"):
        actions.add_item(workspace=workspace, data="x" * (actions.MAX_ITEM_BYTES + 1))


def test_patches_of_the_wrong_type_or_size_are_refused(logged_in_client: Any, workspace: Any) -> None:
    base = f"/api/workspaces/{workspace.pk}/items"
    item = post(logged_in_client, base, {"label": "Draft", "data": "v1"}).json()["item"]
    url = f"{base}/{item['id']}"
    for patch, error in (
        ({"label": "x" * 301}, "label is longer than 300 characters"),
        ({"data": 42}, "data must be a string"),
        ({"tags": "draft"}, "tags must be a list of strings"),
    ):
        response = put(logged_in_client, url, {"patch": patch})
        assert response.status_code == 400 and response.json()["error"] == error
    assert logged_in_client.get(url).json()["item"]["revision"] == 1
