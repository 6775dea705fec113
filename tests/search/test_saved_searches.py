"""Saved searches (issue 40): /api/search/saved CRUD, validated like the search box, counted per user."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from apps.accounts.actions import add_tag

pytestmark = pytest.mark.django_db


def _json(client: Any, method: str, url: str, body: dict[str, Any]) -> Any:
    return getattr(client, method)(url, body, content_type="application/json")


def test_saved_search_crud_with_counts(logged_in_client: Any, store_mail: Any, user: Any) -> None:
    invoice = store_mail(subject="Invoice March", body="Please pay the invoice.\n")
    store_mail(subject="Invoice April", body="Another invoice.\n")
    store_mail(subject="Lunch", body="Pizza?\n")
    add_tag(owner=user, messages=[invoice], name="taxes")
    assert logged_in_client.get("/api/search/saved").json() == []

    created = _json(logged_in_client, "post", "/api/search/saved", {"name": "Taxes", "query": "tag:taxes"})
    assert created.status_code == 201, created.content
    taxes = created.json()
    assert (taxes["name"], taxes["query"], taxes["count"], taxes["error"]) == ("Taxes", "tag:taxes", 1, "")
    words = _json(logged_in_client, "post", "/api/search/saved", {"name": "Invoices", "query": "invoice"}).json()
    assert words["count"] == 2

    listed = logged_in_client.get("/api/search/saved").json()
    assert [(row["name"], row["count"]) for row in listed] == [("Invoices", 2), ("Taxes", 1)]

    changed = _json(logged_in_client, "patch", f"/api/search/saved/{taxes['id']}", {"query": "-tag:taxes"})
    assert changed.status_code == 200, changed.content
    assert changed.json()["count"] == 2
    assert logged_in_client.get(f"/api/search/saved/{taxes['id']}").json()["query"] == "-tag:taxes"

    assert logged_in_client.delete(f"/api/search/saved/{taxes['id']}").status_code == 204
    assert [row["name"] for row in logged_in_client.get("/api/search/saved").json()] == ["Invoices"]


def test_saved_searches_refuse_what_the_search_box_refuses(logged_in_client: Any) -> None:
    first = _json(logged_in_client, "post", "/api/search/saved", {"name": "Unread", "query": "is:unread"})
    assert first.status_code == 201
    for body, field in (
        ({"name": "Unread", "query": "is:starred"}, "name"),  # the name is taken
        ({"name": "Bad", "query": "is:purple"}, "query"),
        ({"name": "Gone", "query": "account:nosuchbox"}, "query"),
        ({"name": "   ", "query": "x"}, "name"),
    ):
        response = _json(logged_in_client, "post", "/api/search/saved", body)
        assert response.status_code == 422, (body, response.content)
        assert response.json()["field"] == field
    renamed = _json(logged_in_client, "patch", f"/api/search/saved/{first.json()['id']}", {"query": "kind:purple"})
    assert renamed.status_code == 422


def test_another_users_saved_searches_are_404(client: Any, user: Any, store_mail: Any) -> None:
    store_mail(subject="Secret plan")
    client.force_login(user)
    saved = _json(client, "post", "/api/search/saved", {"name": "Plans", "query": "secret"}).json()
    other = get_user_model().objects.create_user(username="bravo", email="b@example.com", password="pw-bravo-42")
    client.force_login(other)
    assert client.get("/api/search/saved").json() == []
    assert client.get(f"/api/search/saved/{saved['id']}").status_code == 404
    assert _json(client, "patch", f"/api/search/saved/{saved['id']}", {"name": "x"}).status_code == 404
    assert client.delete(f"/api/search/saved/{saved['id']}").status_code == 404
    # Bravo's own copy of the query counts Bravo's mail only.
    assert _json(client, "post", "/api/search/saved", {"name": "Plans", "query": "secret"}).json()["count"] == 0
