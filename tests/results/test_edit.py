"""Workspace items added and edited in Results (issue 38, item 4), through the real URLconf: an edit is a new
revision in the workspace's log; an edit racing another change (an agent, another tab) is a conflict that keeps
both texts and overwrites nothing; JSON is checked; a file upload is kept byte for byte; another user's items
and runs are 404."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from apps.workspaces.actions import update_item
from apps.workspaces.models import CreatedBy, WorkspaceItem, WorkspaceItemLog
from tests.results.conftest import MakeResult

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}


def test_edit_saves_a_new_revision_and_logs_it(logged_in_client: Client, make_result: MakeResult) -> None:
    item = make_result(items=[{"label": "Reply draft", "data": "Dear Ann,", "mime_type": "text/markdown"}]).items[0]
    form = logged_in_client.get(f"/results/items/{item.pk}/edit/", headers=HX).content.decode()
    assert 'data-testid="item-edit-form"' in form and "Dear Ann," in form and 'name="revision" value="1"' in form

    answer = logged_in_client.post(
        f"/results/items/{item.pk}/edit/",
        {
            "label": "Reply draft v2",
            "description": "shorter",
            "tags": "#draft, ann draft",
            "data": "Hi Ann,\r\nthanks.",
            "revision": "1",
        },
        headers=HX,
    )
    assert answer.status_code == 200 and answer["HX-Trigger"] == "results-changed"
    assert 'data-testid="item-pane"' in answer.content.decode() and "revision 2" in answer.content.decode()
    item.refresh_from_db()
    assert (item.label, item.description, item.tags, item.data, item.revision) == (
        "Reply draft v2",
        "shorter",
        ["draft", "ann"],
        "Hi Ann,\nthanks.",
        2,
    )
    log = WorkspaceItemLog.objects.filter(item_id=item.pk).order_by("revision").last()
    assert log is not None and log.revision == 2 and log.actor["createdBy"] == CreatedBy.USER


def test_an_edit_racing_another_change_overwrites_nothing(
    logged_in_client: Client, user: Any, make_result: MakeResult
) -> None:
    item = make_result(items=[{"label": "Analysis", "data": "first"}]).items[0]
    # An agent saves revision 2 while the user's form still holds revision 1.
    update_item(
        item_id=item.pk, workspace=item.workspace, patch={"data": "the agent's text"}, expected_revision=1, actor={}
    )
    answer = logged_in_client.post(
        f"/results/items/{item.pk}/edit/",
        {"label": "Analysis", "description": "", "tags": "", "data": "the user's text", "revision": "1"},
        headers=HX,
    )
    page = answer.content.decode()
    assert answer.status_code == 409
    assert 'data-testid="edit-conflict"' in page and "the agent&#x27;s text" in page and "the user&#x27;s text" in page
    assert 'name="revision" value="2"' in page  # saving again replaces revision 2, knowingly
    item.refresh_from_db()
    assert (item.data, item.revision) == ("the agent's text", 2)
    again = logged_in_client.post(
        f"/results/items/{item.pk}/edit/",
        {"label": "Analysis", "description": "", "tags": "", "data": "the user's text", "revision": "2"},
        headers=HX,
    )
    assert again.status_code == 200
    item.refresh_from_db()
    assert (item.data, item.revision) == ("the user's text", 3)


def test_json_is_checked_and_the_form_keeps_what_was_written(logged_in_client: Client, make_result: MakeResult) -> None:
    item = make_result(items=[{"label": "Facts", "data": '{"a": 1}', "mime_type": "application/json"}]).items[0]
    answer = logged_in_client.post(
        f"/results/items/{item.pk}/edit/",
        {"label": "Facts", "description": "", "tags": "", "data": '{"a": 1,', "revision": "1"},
        headers=HX,
    )
    assert answer.status_code == 422
    assert (
        "The content is not valid JSON" in answer.content.decode() and "{&quot;a&quot;: 1," in answer.content.decode()
    )
    item.refresh_from_db()
    assert (item.data, item.revision) == ('{"a": 1}', 1)


def test_a_file_item_keeps_its_content_when_edited(logged_in_client: Client, make_result: MakeResult) -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(40))).decode()
    item = make_result(items=[{"label": "chart", "data": png, "mime_type": "image/png", "encoding": "base64"}]).items[0]
    form = logged_in_client.get(f"/results/items/{item.pk}/edit/", headers=HX).content.decode()
    assert "<textarea" not in form and "The content is a file" in form
    logged_in_client.post(
        f"/results/items/{item.pk}/edit/",
        {"label": "Chart of Q3", "description": "", "tags": "", "data": "ignored", "revision": "1"},
        headers=HX,
    )
    item.refresh_from_db()
    assert (item.label, item.data, item.encoding) == ("Chart of Q3", png, "base64")


def test_add_a_written_item_and_an_uploaded_file_to_a_run(logged_in_client: Client, make_result: MakeResult) -> None:
    result = make_result(items=[{"label": "Summary"}])
    form = logged_in_client.get(f"/results/runs/{result.run.pk}/add-item/", headers=HX).content.decode()
    assert 'data-testid="item-add-form"' in form and 'hx-encoding="multipart/form-data"' in form

    empty = logged_in_client.post(
        f"/results/runs/{result.run.pk}/add-item/", {"label": "x", "mime_type": "text/plain", "data": " "}, headers=HX
    )
    assert empty.status_code == 422 and "Write the content, or upload a file." in empty.content.decode()

    written = logged_in_client.post(
        f"/results/runs/{result.run.pk}/add-item/",
        {
            "label": "My notes",
            "description": "",
            "tags": "mine",
            "mime_type": "text/markdown",
            "data": "# Notes\n- call Ann",
        },
        headers=HX,
    )
    assert written.status_code == 200 and written["HX-Trigger"] == "results-changed"
    notes = WorkspaceItem.objects.get(workspace__run_id=result.run.pk, label="My notes")
    assert (notes.data, notes.mime_type, notes.tags, notes.created_by) == (
        "# Notes\n- call Ann",
        "text/markdown",
        ["mine"],
        CreatedBy.USER,
    )
    assert written["HX-Push-Url"].endswith(f"?node=item-{notes.pk}")

    payload = b"%PDF-1.4\n\x00\xff binary"
    uploaded = logged_in_client.post(
        f"/results/runs/{result.run.pk}/add-item/",
        {
            "label": "",
            "mime_type": "text/markdown",
            "data": "",
            "file": SimpleUploadedFile("quote.pdf", payload, "application/pdf"),
        },
        headers=HX,
    )
    assert uploaded.status_code == 200
    pdf = WorkspaceItem.objects.get(workspace__run_id=result.run.pk, label="quote.pdf")
    assert (pdf.mime_type, pdf.encoding, base64.b64decode(pdf.data)) == ("application/pdf", "base64", payload)
    text = logged_in_client.post(
        f"/results/runs/{result.run.pk}/add-item/",
        {"label": "", "file": SimpleUploadedFile("minutes.txt", "Grüße\n".encode(), "text/plain")},
        headers=HX,
    )
    assert text.status_code == 200
    minutes = WorkspaceItem.objects.get(workspace__run_id=result.run.pk, label="minutes.txt")
    assert (minutes.encoding, minutes.data) == ("utf8", "Grüße\n")
    # The tree shows them.
    tree = logged_in_client.get("/results/tree/", headers=HX).content.decode()
    assert all(f'data-node="item-{i.pk}"' in tree for i in (notes, pdf, minutes))


def test_another_users_items_and_runs_are_not_found(client: Client, make_result: MakeResult) -> None:
    result = make_result(items=[{"label": "Private", "data": "secret"}])
    other = get_user_model().objects.create_user(username="other", email="other@example.com", password="x" * 20)
    client.force_login(other)
    item = result.items[0]
    assert client.get(f"/results/items/{item.pk}/edit/", headers=HX).status_code == 404
    posted = client.post(
        f"/results/items/{item.pk}/edit/",
        {"label": "mine now", "description": "", "tags": "", "data": "x", "revision": "1"},
        headers=HX,
    )
    assert posted.status_code == 404
    assert client.post(f"/results/runs/{result.run.pk}/add-item/", {"data": "x"}, headers=HX).status_code == 404
    item.refresh_from_db()
    assert (item.label, item.data) == ("Private", "secret")
    assert WorkspaceItem.objects.filter(workspace__run_id=result.run.pk).count() == 1


def test_the_tree_filters_by_item_type(logged_in_client: Client, make_result: MakeResult) -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
    charts = make_result(
        subject="Quarterly numbers",
        items=[
            {"label": "Chart", "mime_type": "image/png", "encoding": "base64", "data": png},
            {"label": "Notes", "mime_type": "text/markdown"},
        ],
    )
    text_only = make_result(subject="Plain reply", items=[{"label": "Draft", "mime_type": "text/plain"}])
    page = logged_in_client.get("/results/").content.decode()
    assert (
        '<option value="image/png">image/png</option>' in page
        and '<option value="text/plain">text/plain</option>' in page
    )
    tree = logged_in_client.get("/results/tree/", {"type": "image/png"}, headers=HX).content.decode()
    chart, notes = charts.items
    assert f'data-node="item-{chart.pk}"' in tree and f'data-node="item-{notes.pk}"' not in tree
    assert "Plain reply" not in tree and f'data-node="item-{text_only.items[0].pk}"' not in tree
    # "Delete all shown" under the filter lists exactly the shown items.
    confirm = logged_in_client.post("/results/delete/", {"scope": "all", "type": "image/png"}, headers=HX)
    assert f'value="{chart.pk}"' in confirm.content.decode() and f'value="{notes.pk}"' not in confirm.content.decode()
