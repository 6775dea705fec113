"""Tags on messages and threads (issue 40): the actions, /api/mail/… and `tag:` in search, for one user only."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from apps.accounts import actions, selectors
from apps.accounts.actions import create_local_account
from apps.accounts.models import MailTag, Message

pytestmark = pytest.mark.django_db


def _search(client: Any, query: str) -> set[str]:
    response = client.get("/api/search", {"q": query, "mode": "keyword", "limit": 100})
    assert response.status_code == 200, response.content
    return {row["title"].removeprefix("Re: ") for row in response.json()["results"]}  # a thread: its newest


def _thread_of_two(store_mail: Any) -> tuple[Message, Message]:
    first = store_mail(subject="Tax return 2024", body="The forms are attached.\n")
    reply = store_mail(subject="Re: Tax return 2024", body="Thanks, received.\n")
    assert first.thread_id is not None and first.thread_id == reply.thread_id
    return first, reply


def test_a_tagged_thread_is_found_by_tag_and_listed_with_its_count(
    logged_in_client: Any, store_mail: Any, user: Any
) -> None:
    first, reply = _thread_of_two(store_mail)
    other = store_mail(subject="Lunch on Friday", body="Pizza?\n")

    response = logged_in_client.post(
        f"/api/mail/threads/{first.thread_id}/tags", {"name": "Taxes"}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    assert response.json() == {"tags": ["Taxes"]}
    # Every message of the thread carries it; the spelling first given is kept, compared casefolded.
    assert selectors.tags_by_message(message_ids=[first.pk, reply.pk, other.pk]) == {
        first.pk: ["Taxes"],
        reply.pk: ["Taxes"],
        other.pk: [],
    }
    logged_in_client.post(f"/api/mail/messages/{other.pk}/tags", {"name": "taxes"}, content_type="application/json")
    assert MailTag.objects.filter(owner=user).count() == 1
    assert logged_in_client.get("/api/mail/tags").json() == [{"name": "Taxes", "count": 3}]

    assert _search(logged_in_client, "tag:taxes") == {"Tax return 2024", "Lunch on Friday"}
    assert _search(logged_in_client, "tag:TAXES lunch") == {"Lunch on Friday"}
    assert _search(logged_in_client, "-tag:taxes") == set()
    assert logged_in_client.get(f"/api/mail/threads/{first.thread_id}/tags").json() == {"tags": ["Taxes"]}

    # Off one message of the thread: the thread still has it through the other one.
    response = logged_in_client.delete(f"/api/mail/messages/{reply.pk}/tags?name=TAXES")
    assert response.json() == {"tags": []}
    assert logged_in_client.get(f"/api/mail/threads/{first.thread_id}/tags").json() == {"tags": ["Taxes"]}
    assert logged_in_client.get("/api/mail/tags").json() == [{"name": "Taxes", "count": 2}]

    # Mail deleted on the server is not counted, and a tag left only there is not listed.
    Message.objects.filter(pk=other.pk).update(deleted_at=timezone.now())
    assert logged_in_client.get("/api/mail/tags").json() == [{"name": "Taxes", "count": 1}]
    Message.objects.filter(pk=other.pk).update(deleted_at=None)

    # Off everything: the tag is gone, as in notmuch.
    logged_in_client.delete(f"/api/mail/threads/{first.thread_id}/tags?name=taxes")
    logged_in_client.delete(f"/api/mail/messages/{other.pk}/tags?name=taxes")
    assert logged_in_client.get("/api/mail/tags").json() == []
    assert _search(logged_in_client, "tag:taxes") == set()
    assert len(_search(logged_in_client, "-tag:taxes")) == 2  # the thread and the lunch mail


def test_tag_names_are_one_search_token(logged_in_client: Any, store_mail: Any) -> None:
    message = store_mail(subject="Hello")
    for bad in ("two words", 'say"what', "---", " "):
        response = logged_in_client.post(
            f"/api/mail/messages/{message.pk}/tags", {"name": bad}, content_type="application/json"
        )
        assert response.status_code == 422, (bad, response.content)
        assert response.json()["error"]
    response = logged_in_client.post(
        f"/api/mail/messages/{message.pk}/tags", {"name": "Über/2024"}, content_type="application/json"
    )
    assert response.json() == {"tags": ["Über/2024"]}
    assert _search(logged_in_client, 'tag:"über/2024"') == {"Hello"}


def test_another_users_tags_are_invisible_and_untouchable(client: Any, store_mail: Any, user: Any) -> None:
    first, _ = _thread_of_two(store_mail)
    actions.add_tag(owner=user, messages=[first], name="taxes")
    other = get_user_model().objects.create_user(username="bravo", email="b@example.com", password="pw-bravo-42")
    own_account = create_local_account(owner=other, name="bravo box", address="b@example.com")
    client.force_login(other)

    assert client.get("/api/mail/tags").json() == []
    assert _search(client, "tag:taxes") == set()
    assert client.get(f"/api/mail/messages/{first.pk}/tags").status_code == 404
    response = client.post(f"/api/mail/threads/{first.thread_id}/tags", {"name": "x"}, content_type="application/json")
    assert response.status_code == 404
    assert client.delete(f"/api/mail/messages/{first.pk}/tags?name=taxes").status_code == 404
    assert selectors.tags_by_message(message_ids=[first.pk]) == {first.pk: ["taxes"]}
    # The action refuses too, whoever calls it.
    with pytest.raises(PermissionError):
        actions.add_tag(owner=other, messages=[first], name="mine")
    assert own_account.messages.count() == 0
