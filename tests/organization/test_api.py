"""The seed's API paths through the real URLconf: suggestions, respond, organize, settings, undo; login
required and another owner's objects are 404."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.test import Client

from apps.organization import actions
from apps.organization.models import Library, Suggestion
from tests.organization.conftest import write


def _post(client: Client, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


def test_suggest_respond_and_undo_over_the_api(client: Client, user: Any, seeded_library: Library) -> None:
    assert client.get("/api/inbox/suggestions").status_code == 401
    client.force_login(user)
    write(seeded_library.root_path, "inbox/ticket.txt", "RailConnect train ticket, coach, seat and platform.")
    organized = _post(client, "/api/inbox/organize", {"paths": ["inbox/ticket.txt"]}).json()
    assert organized["newFiles"] == ["inbox/ticket.txt"]
    [suggestion] = organized["suggestions"]
    assert suggestion["status"] == "pending" and suggestion["file"] == "inbox/ticket.txt"
    listed = client.get("/api/inbox/suggestions?status=pending").json()
    assert [s["id"] for s in listed] == [suggestion["id"]]

    bad = _post(client, f"/api/inbox/suggestions/{suggestion['id']}/respond", {"action": "choose"})
    assert bad.status_code == 409 and "needs a folder" in bad.json()["error"]
    chosen = _post(
        client,
        f"/api/inbox/suggestions/{suggestion['id']}/respond",
        {"action": "choose", "targetFolder": "travel/rail"},
    ).json()
    assert chosen["status"] == "accepted" and chosen["finalFolder"] == "travel/rail"
    assert chosen["move"]["to"] == "travel/rail/ticket.txt"
    undone = client.post(f"/api/organization/moves/{chosen['move']['id']}/undo")
    assert undone.status_code == 200 and undone.json()["undoneAt"]
    assert (seeded_library.root_path / "inbox/ticket.txt").is_file()
    again = client.post(f"/api/organization/moves/{chosen['move']['id']}/undo")
    assert again.status_code == 409 and "already undone" in again.json()["error"]


def test_settings_round_trip_and_validation(client: Client, user: Any, library: Library) -> None:
    client.force_login(user)
    current = client.get("/api/settings/organization").json()
    assert current["suggestThreshold"] == 0.8 and current["autoMoveThreshold"] == 0.95
    assert current["libraryRoot"] == library.root
    updated = client.put(
        "/api/settings/organization",
        json.dumps({"autoMove": True, "excludeFolders": ["archive/", "old"], "suggestThreshold": 0.7}),
        content_type="application/json",
    ).json()
    assert updated["autoMove"] and updated["excludeFolders"] == ["archive", "old"]
    assert updated["suggestThreshold"] == 0.7
    refused = client.put(
        "/api/settings/organization", json.dumps({"excludeFolders": ["../etc"]}), content_type="application/json"
    )
    assert refused.status_code == 422
    relative = client.put(
        "/api/settings/organization", json.dumps({"libraryRoot": "relative/path"}), content_type="application/json"
    )
    assert relative.status_code == 422 and "absolute path" in relative.json()["error"]


def test_another_owners_suggestions_and_moves_are_404(client: Client, user: Any, seeded_library: Library) -> None:
    path = write(seeded_library.root_path, "inbox/mine.txt", "QNB Bank statement")
    file, _ = actions.register_file(library=seeded_library, path=path)
    assert file is not None
    from apps.organization.suggesting import suggest_for_file

    suggestion = suggest_for_file(file=file)
    assert suggestion is not None
    other = get_user_model().objects.create_user(username="other", email="other@example.com", password="x")
    client.force_login(other)
    respond = _post(client, f"/api/inbox/suggestions/{suggestion.pk}/respond", {"action": "reject"})
    assert respond.status_code == 404
    assert client.get("/api/inbox/suggestions").json() == []
    assert client.post(f"/organize/suggestions/{suggestion.pk}/respond/", {"action": "reject"}).status_code == 404
    assert Suggestion.objects.get(pk=suggestion.pk).status == "pending"
