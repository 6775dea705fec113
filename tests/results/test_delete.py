"""Deleting results: a confirmation first, then soft delete through the workspaces actions or a permanent one."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from apps.workspaces.models import WorkspaceItem, WorkspaceItemLog
from tests.results.conftest import MakeResult

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}


def _confirm_ids(html: str) -> list[int]:
    return [int(part.split('"', 1)[0]) for part in html.split('name="item" value="')[1:]]


def test_delete_active_asks_first_then_soft_deletes(logged_in_client: Client, make_result: MakeResult) -> None:
    result = make_result(items=[{}, {}])
    other = make_result(subject="Keep me", items=[{}])
    asked = logged_in_client.post("/results/delete/", {"scope": "active", "active": f"run-{result.run.pk}"}, headers=HX)
    html = asked.content.decode()
    assert "Delete 2 items?" in html and sorted(_confirm_ids(html)) == sorted(i.pk for i in result.items)
    assert WorkspaceItem.objects.filter(deleted=True).count() == 0  # nothing happens before the confirmation
    done = logged_in_client.post("/results/delete/", {"item": _confirm_ids(html), "confirm": "soft"}, headers=HX)
    assert "Deleted 2 items." in done.content.decode() and done["HX-Trigger"] == "results-changed"
    assert set(WorkspaceItem.objects.filter(deleted=True).values_list("pk", flat=True)) == {i.pk for i in result.items}
    assert WorkspaceItemLog.objects.filter(action="remove", actor__via="results").count() == 2
    tree = logged_in_client.get("/results/tree/", headers=HX).content.decode()
    assert f"item-{result.items[0].pk}" not in tree and f"item-{other.items[0].pk}" in tree


def test_delete_selected_nodes_permanently(logged_in_client: Client, make_result: MakeResult) -> None:
    first = make_result(items=[{}, {}])
    second = make_result(subject="Second", items=[{}])
    kept = make_result(subject="Kept", items=[{}])
    nodes = [f"item-{first.items[0].pk}", f"email-{second.message.pk}", "item-nonsense", "run-"]
    html = logged_in_client.post("/results/delete/", {"scope": "selected", "node": nodes}, headers=HX).content.decode()
    ids = _confirm_ids(html)
    assert sorted(ids) == sorted([first.items[0].pk, second.items[0].pk])
    done = logged_in_client.post("/results/delete/", {"item": ids, "confirm": "hard"}, headers=HX)
    assert "Permanently deleted 2 items." in done.content.decode()
    assert set(WorkspaceItem.objects.values_list("pk", flat=True)) == {first.items[1].pk, kept.items[0].pk}
    assert WorkspaceItemLog.objects.filter(action="hard_delete").count() == 2


def test_delete_all_follows_the_filters(logged_in_client: Client, make_result: MakeResult) -> None:
    tagged = make_result(items=[{"tags": ["spam"]}, {}])
    make_result(subject="Other", items=[{"tags": ["keep"]}])
    html = logged_in_client.post("/results/delete/", {"scope": "all", "tag": "spam"}, headers=HX).content.decode()
    assert _confirm_ids(html) == [tagged.items[0].pk]
    everything = logged_in_client.post("/results/delete/", {"scope": "all"}, headers=HX).content.decode()
    assert "Delete 3 items?" in everything


def test_nothing_selected_says_what_to_do(logged_in_client: Client, make_result: MakeResult) -> None:
    make_result(items=[{}])
    html = logged_in_client.post("/results/delete/", {"scope": "selected"}, headers=HX).content.decode()
    assert "Nothing to delete" in html and "Tick the boxes" in html


def test_another_users_items_are_never_deleted(client: Client, user: Any, make_result: MakeResult) -> None:
    other = get_user_model().objects.create_user(username="other", email="other@example.com", password="x" * 12)
    theirs = make_result(subject="Theirs", owner=other, items=[{}])
    client.force_login(user)
    nodes = [f"item-{theirs.items[0].pk}", f"run-{theirs.run.pk}", f"email-{theirs.message.pk}"]
    html = client.post("/results/delete/", {"scope": "selected", "node": nodes}, headers=HX).content.decode()
    assert "Nothing to delete" in html
    for confirm in ("soft", "hard"):
        response = client.post("/results/delete/", {"item": [theirs.items[0].pk], "confirm": confirm}, headers=HX)
        assert "Nothing was deleted" in response.content.decode()
    assert WorkspaceItem.objects.filter(pk=theirs.items[0].pk, deleted=False).exists()
