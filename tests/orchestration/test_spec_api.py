"""The design spec's JSON routes through the real URLconf: auth/whoami, auth/logout, conversations/byDirectorEmail."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from apps.orchestration.actions import create_director
from apps.orchestration.models import Conversation, ThreadKind
from tests.results.conftest import make_run, store_message

pytestmark = pytest.mark.django_db


def _director_thread(owner: Any, *, name: str = "Clients", subject: str = "Invoice 42") -> tuple[Any, Any]:
    director = create_director(owner=owner, name=name)
    result = make_run(owner, message=store_message(owner, subject=subject), director=director)
    thread = Conversation.objects.create(
        run=result.run,
        kind=ThreadKind.DIRECTOR,
        director=director,
        messages=[{"role": "system", "content": f"secret of {owner.username}"}],
    )
    return result, thread


def test_whoami_answers_anonymous_and_signed_in(client: Client, user: Any) -> None:
    anonymous = client.get("/api/auth/whoami")
    assert anonymous.status_code == 200 and anonymous.json()["authenticated"] is False
    client.force_login(user)
    me = client.get("/api/auth/whoami").json()
    assert me["authenticated"] is True and me["id"] == user.pk and me["username"] == "owner"
    assert me["email"] == "owner@example.com" and me["isSuperuser"] is False


def test_logout_ends_the_session_and_needs_csrf(user: Any) -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    assert strict.post("/api/auth/logout").status_code == 403  # no CSRF token: refused like every API write
    client = Client()
    assert client.post("/api/auth/logout").status_code == 401
    client.force_login(user)
    assert client.post("/api/auth/logout").json() == {"loggedOut": True}
    assert client.get("/api/auth/whoami").json()["authenticated"] is False
    assert client.get("/api/conversations/byDirectorEmail", {"directorId": 1, "emailId": 1}).status_code == 401


def test_by_director_email_finds_the_director_thread_and_its_workspace(client: Client, user: Any) -> None:
    from apps.workspaces.models import Workspace

    result, thread = _director_thread(user)
    client.force_login(user)
    answer = client.get(
        "/api/conversations/byDirectorEmail", {"directorId": result.run.director_id, "emailId": result.message.pk}
    )
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["id"] == thread.pk and body["sessionId"] == thread.session_id and body["runId"] == result.run.pk
    assert body["kind"] == "director" and body["emailId"] == result.message.pk
    assert body["workspaceId"] == Workspace.objects.get(run_id=result.run.pk).pk
    assert body["messages"] == [{"role": "system", "content": "secret of owner"}]
    # The workspace it names lists the run's items through the workspaces API.
    assert client.get(f"/api/workspaces/{body['workspaceId']}/items").status_code == 200
    # Another email of the same director has no thread: 404, not someone else's.
    other_mail = store_message(user, subject="Other")
    missing = client.get(
        "/api/conversations/byDirectorEmail", {"directorId": result.run.director_id, "emailId": other_mail.pk}
    )
    assert missing.status_code == 404 and missing.json() == {"error": "Not found"}


def test_by_director_email_is_owner_scoped(client: Client, user: Any) -> None:
    other = get_user_model().objects.create_user(username="other", email="other@example.com", password="x" * 12)
    theirs, _ = _director_thread(other, name="Theirs", subject="Their secret")
    client.force_login(user)
    answer = client.get(
        "/api/conversations/byDirectorEmail", {"directorId": theirs.run.director_id, "emailId": theirs.message.pk}
    )
    assert answer.status_code == 404 and b"secret" not in answer.content
    client.force_login(other)
    assert (
        client.get(
            "/api/conversations/byDirectorEmail",
            {"directorId": theirs.run.director_id, "emailId": theirs.message.pk},
        ).status_code
        == 200
    )


def test_settings_timeout_is_staff_only_and_virtual_root_superuser_only(
    client: Client, user: Any, staff_user: Any, tmp_path: Any
) -> None:
    from apps.orchestration.selectors import filesystem_root_for_owner

    assert Client().get("/api/settings").status_code == 401
    client.force_login(user)
    mine = client.get("/api/settings").json()
    assert mine["sessionTimeoutMinutes"] == 15 and mine["virtualRoot"] == ""
    assert mine["canEditSessionTimeout"] is False and mine["canEditVirtualRoot"] is False
    assert mine["effectiveVirtualRoot"] == filesystem_root_for_owner(owner_id=user.pk)
    put = client.put("/api/settings", {"sessionTimeoutMinutes": 5}, content_type="application/json")
    assert put.status_code == 403
    put = client.put("/api/settings", {"virtualRoot": str(tmp_path)}, content_type="application/json")
    assert put.status_code == 403
    assert client.get("/api/settings").json()["sessionTimeoutMinutes"] == 15

    client.force_login(staff_user)  # staff and superuser
    bad = client.put("/api/settings", {"sessionTimeoutMinutes": 0}, content_type="application/json")
    assert bad.status_code == 422
    relative = client.put("/api/settings", {"virtualRoot": "files"}, content_type="application/json")
    assert relative.status_code == 422
    saved = client.put(
        "/api/settings", {"sessionTimeoutMinutes": 7, "virtualRoot": str(tmp_path)}, content_type="application/json"
    ).json()
    assert saved["sessionTimeoutMinutes"] == 7 and saved["virtualRoot"] == str(tmp_path)
    assert filesystem_root_for_owner(owner_id=staff_user.pk) == str(tmp_path)
    # The timeout is global, the root per owner: the plain user sees the new timeout and still the default root.
    client.force_login(user)
    theirs = client.get("/api/settings").json()
    assert theirs["sessionTimeoutMinutes"] == 7 and theirs["virtualRoot"] == ""


def test_directors_list_their_agents_in_order_and_reorder_is_owner_scoped(client: Client, user: Any) -> None:
    from apps.orchestration.config_actions import create_agent

    mine = create_director(owner=user, name="Clients")
    first = create_agent(director=mine, name="Psychologist", slug="psychologist")
    second = create_agent(director=mine, name="Response", slug="response")
    other = get_user_model().objects.create_user(username="other", email="other@example.com", password="x" * 12)
    theirs = create_director(owner=other, name="Theirs")
    their_agent = create_agent(director=theirs, name="Secret agent", slug="secret")
    client.force_login(user)
    listed = client.get("/api/directors").json()
    assert [d["name"] for d in listed] == ["Clients"]
    assert [a["slug"] for a in listed[0]["agents"]] == ["psychologist", "response"]
    moved = client.put(
        f"/api/directors/{mine.pk}/agents/order",
        {"agentIds": [second.pk, their_agent.pk, first.pk]},
        content_type="application/json",
    )
    assert moved.status_code == 200, moved.content
    assert [a["id"] for a in moved.json()["agents"]] == [second.pk, first.pk]
    assert [a["slug"] for a in client.get(f"/api/directors/{mine.pk}").json()["agents"]] == ["response", "psychologist"]
    assert client.get(f"/api/directors/{theirs.pk}").status_code == 404
    refused = client.put(
        f"/api/directors/{theirs.pk}/agents/order", {"agentIds": [their_agent.pk]}, content_type="application/json"
    )
    assert refused.status_code == 404
    assert Client().get("/api/directors").status_code == 401
