"""Deleted items in Results: the "Deleted items" view lists soft-deleted items, Restore brings them back through
the workspaces actions (logged), a path taken meanwhile is refused with the reason, deleted items can still be
erased for good, and another user's items are never touched."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from apps.results import selectors
from apps.results.actions import delete_items
from apps.results.selectors import ResultFilters
from apps.workspaces.actions import add_item
from apps.workspaces.models import WorkspaceItem, WorkspaceItemLog
from tests.results.conftest import MakeResult

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}


def test_deleted_items_are_listed_and_restored(logged_in_client: Client, user: Any, make_result: MakeResult) -> None:
    result = make_result(items=[{"label": "Reply draft"}, {"label": "Analysis"}])
    make_result(subject="Untouched", items=[{"label": "Summary"}])
    gone, kept = result.items
    delete_items(user=user, item_ids=[gone.pk], hard=False)

    live = logged_in_client.get("/results/tree/", headers=HX).content.decode()
    assert f'data-node="item-{gone.pk}"' not in live and f'data-node="item-{kept.pk}"' in live
    assert "restore-item" not in live
    deleted = logged_in_client.get("/results/tree/", {"show": "deleted"}, headers=HX).content.decode()
    assert f'data-node="item-{gone.pk}"' in deleted and 'data-testid="restore-item"' in deleted
    assert f'data-node="item-{kept.pk}"' not in deleted and "Untouched" not in deleted  # only runs with deleted items
    page = logged_in_client.get("/results/", {"show": "deleted", "node": f"item-{gone.pk}"}).content.decode()
    assert '<option value="deleted" selected>Deleted items</option>' in page
    assert 'data-testid="item-deleted"' in page and 'data-testid="restore-item-pane"' in page
    assert 'data-testid="copy-item"' not in page  # a deleted item offers Restore, not Copy or Reply

    restored = logged_in_client.post("/results/restore/", {"item": [gone.pk]}, headers=HX)
    assert "Restored 1 item" in restored.content.decode() and "data-refresh-tree" in restored.content.decode()
    gone.refresh_from_db()
    assert not gone.deleted and gone.revision == 3  # added r1, deleted r2, restored r3
    log = WorkspaceItemLog.objects.filter(item_id=gone.pk).order_by("at", "pk").last()
    assert log is not None and (log.action, log.actor["restored"], log.actor["via"]) == ("update", True, "results")
    assert "r3 restored by user" in logged_in_client.get("/results/", {"node": f"item-{gone.pk}"}).content.decode()
    empty = logged_in_client.get("/results/tree/", {"show": "deleted"}, headers=HX).content.decode()
    assert "No deleted items." in empty
    again = logged_in_client.post("/results/restore/", {"item": [gone.pk]}, headers=HX).content.decode()
    assert "Nothing was restored" in again


def test_the_deleted_items_tree_reads_in_constant_queries(
    user: Any, make_result: MakeResult, django_assert_num_queries: Any
) -> None:
    deleted = ResultFilters(deleted=True)
    first = make_result(items=[{}, {}])
    delete_items(user=user, item_ids=[first.items[0].pk], hard=False)
    with django_assert_num_queries(4):  # the page's emails, their runs, workspaces, deleted items
        small = selectors.results_tree(user=user, filters=deleted)
    for number in range(5):
        more = make_result(subject=f"Invoice {number}", items=[{}, {}])
        delete_items(user=user, item_ids=[item.pk for item in more.items], hard=False)
    with django_assert_num_queries(4):
        large = selectors.results_tree(user=user, filters=deleted)
    assert [len(email.runs[0].items) for email in small.emails] == [1]
    shown = {item.pk for email in large.emails for run in email.runs for item in run.items}
    assert len(large.emails) == 6 and shown == set(
        WorkspaceItem.objects.filter(deleted=True).values_list("pk", flat=True)
    )


def test_restore_all_shown(logged_in_client: Client, user: Any, make_result: MakeResult) -> None:
    first = make_result(items=[{"tags": ["draft"]}, {}])
    second = make_result(subject="Second", items=[{"tags": ["draft"]}])
    delete_items(user=user, item_ids=[first.items[0].pk, first.items[1].pk, second.items[0].pk], hard=False)
    tree = logged_in_client.get("/results/tree/", {"show": "deleted", "tag": "draft"}, headers=HX).content.decode()
    # "Restore all shown" posts the item inputs of every email row loaded (older pages appended included).
    assert 'hx-include="#results-tree-list input[name=item]"' in tree
    ids = sorted(int(part.split('"', 1)[0]) for part in tree.split('<input type="hidden" name="item" value="')[1:])
    assert ids == sorted([first.items[0].pk, second.items[0].pk])  # what the filters show, not the untagged one
    html = logged_in_client.post("/results/restore/", {"item": ids}, headers=HX).content.decode()
    assert "Restored 2 items" in html
    assert list(WorkspaceItem.objects.filter(deleted=True).values_list("pk", flat=True)) == [first.items[1].pk]
    live = logged_in_client.get("/results/tree/", headers=HX).content.decode()
    assert 'data-testid="restore-all"' not in live


def test_a_path_taken_meanwhile_is_refused_with_the_reason(
    logged_in_client: Client, user: Any, make_result: MakeResult
) -> None:
    result = make_result(items=[{"label": "Reply v1", "path": "reply.md"}])
    (first,) = result.items
    delete_items(user=user, item_ids=[first.pk], hard=False)
    add_item(workspace=first.workspace, label="Reply v2", data="newer", path="reply.md")
    html = logged_in_client.post("/results/restore/", {"item": [first.pk]}, headers=HX).content.decode()
    assert "Not restored:" in html and "“Reply v1”: path &#x27;reply.md&#x27; is already used" in html
    assert WorkspaceItem.objects.get(pk=first.pk).deleted


def test_deleted_items_can_be_erased_for_good(logged_in_client: Client, user: Any, make_result: MakeResult) -> None:
    result = make_result(items=[{}, {}])
    delete_items(user=user, item_ids=[item.pk for item in result.items], hard=False)
    html = logged_in_client.post("/results/delete/", {"scope": "all", "show": "deleted"}, headers=HX).content.decode()
    assert "Permanently delete 2 deleted items?" in html and 'data-testid="confirm-soft"' not in html
    live = logged_in_client.post("/results/delete/", {"scope": "all"}, headers=HX).content.decode()
    assert "Nothing to delete" in live  # the live view never offers the deleted ones
    ids = [item.pk for item in result.items]
    done = logged_in_client.post("/results/delete/", {"item": ids, "confirm": "hard"}, headers=HX)
    assert "Permanently deleted 2 items." in done.content.decode()
    assert not WorkspaceItem.objects.filter(pk__in=ids).exists()


def test_another_users_deleted_items_are_never_restored(client: Client, user: Any, make_result: MakeResult) -> None:
    other = get_user_model().objects.create_user(username="other", email="other@example.com", password="x" * 12)
    theirs = make_result(subject="Theirs", owner=other, items=[{}])
    delete_items(user=other, item_ids=[theirs.items[0].pk], hard=False)
    client.force_login(user)
    assert "Theirs" not in client.get("/results/tree/", {"show": "deleted"}, headers=HX).content.decode()
    assert client.get(f"/results/items/{theirs.items[0].pk}/", headers=HX).status_code == 404
    html = client.post("/results/restore/", {"item": [theirs.items[0].pk]}, headers=HX).content.decode()
    assert "Nothing was restored" in html
    assert WorkspaceItem.objects.get(pk=theirs.items[0].pk).deleted
