"""The design spec's configuration API through the real URLconf: /api/prompts, /api/prompt-templates,
/api/directors (create/update/delete), /api/agents, /api/memory and /api/accounts (list/get): CRUD, owner
scoping (another user's object is 404 and stays as it was), validation (422 naming the field), secrets never
in an answer."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from apps.accounts.actions import create_imap_account, create_local_account
from apps.llm.models import ApiConfig
from apps.orchestration.actions import create_director
from apps.orchestration.config_actions import create_agent, create_prompt
from apps.orchestration.models import Agent, Director, Memory, Prompt

pytestmark = pytest.mark.django_db

JSON = "application/json"


@pytest.fixture
def other(db: Any) -> Any:
    return get_user_model().objects.create_user(username="other", email="other@example.com", password="x" * 12)


@pytest.fixture
def api(client: Client, user: Any) -> Client:
    client.force_login(user)
    return client


def _post(client: Client, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, body, content_type=JSON)


def _put(client: Client, url: str, body: dict[str, Any]) -> Any:
    return client.put(url, body, content_type=JSON)


def _model(owner: Any, name: str = "model") -> ApiConfig:
    return ApiConfig.objects.create(owner=owner, name=name, model="m", api_key=f"sk-{name}-secret-key")


# --- prompts and templates ---------------------------------------------------------------------------------


def test_prompt_crud_keeps_the_message_order(api: Client, user: Any) -> None:
    created = _post(
        api,
        "/api/prompts",
        {
            "name": "Triage",
            "messages": [
                {"role": "system", "content": "You sort mail for {{director.name}}."},
                {"role": "user", "content": "{{email}}"},
                {"role": "assistant", "content": '{"tool": "sort", "arguments": {}}'},
                {"role": "tool", "content": '{"ok": true}'},
            ],
        },
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["name"] == "Triage" and body["isTemplate"] is False and body["usedBy"] == []
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool"]
    prompt_id = body["id"]
    assert api.get(f"/api/prompts/{prompt_id}").json() == body
    assert [p["id"] for p in api.get("/api/prompts").json()] == [prompt_id]
    # Not a template: the templates collection does not hold it.
    assert api.get("/api/prompt-templates").json() == []
    assert api.get(f"/api/prompt-templates/{prompt_id}").status_code == 404

    renamed = _put(api, f"/api/prompts/{prompt_id}", {"name": "Triage v2"}).json()
    assert renamed["name"] == "Triage v2" and renamed["messages"] == body["messages"]
    replaced = _put(
        api,
        f"/api/prompts/{prompt_id}",
        {"messages": [{"role": "user", "content": "second"}, {"role": "system", "content": "first"}]},
    ).json()
    assert replaced["name"] == "Triage v2"
    assert replaced["messages"] == [{"role": "user", "content": "second"}, {"role": "system", "content": "first"}]
    stored = Prompt.objects.get(pk=prompt_id)
    assert [(m.role, m.content) for m in stored.messages.order_by("order")] == [("user", "second"), ("system", "first")]

    assert api.delete(f"/api/prompts/{prompt_id}").status_code == 204
    assert not Prompt.objects.filter(pk=prompt_id).exists()
    assert api.get(f"/api/prompts/{prompt_id}").status_code == 404


def test_prompt_templates_are_their_own_collection(api: Client, user: Any) -> None:
    created = _post(
        api, "/api/prompt-templates", {"name": "Polite reply", "messages": [{"role": "system", "content": "Be kind."}]}
    )
    assert created.status_code == 201, created.content
    template = created.json()
    assert template["isTemplate"] is True
    assert Prompt.objects.get(pk=template["id"]).is_template is True
    assert [t["name"] for t in api.get("/api/prompt-templates").json()] == ["Polite reply"]
    assert api.get("/api/prompts").json() == []
    assert api.get(f"/api/prompts/{template['id']}").status_code == 404
    assert _put(api, f"/api/prompts/{template['id']}", {"name": "x"}).status_code == 404
    assert api.delete(f"/api/prompts/{template['id']}").status_code == 404
    updated = _put(api, f"/api/prompt-templates/{template['id']}", {"name": "Polite"}).json()
    assert updated["name"] == "Polite" and updated["isTemplate"] is True
    assert api.delete(f"/api/prompt-templates/{template['id']}").status_code == 204
    assert not Prompt.objects.filter(pk=template["id"]).exists()


def test_prompt_validation_names_the_field(api: Client) -> None:
    def error(response: Any) -> dict[str, Any]:
        assert response.status_code == 422, response.content
        return response.json()

    unknown = error(
        _post(api, "/api/prompts", {"name": "P", "messages": [{"role": "system", "content": "Hi {{nobody}}"}]})
    )
    assert unknown["field"] == "messages" and "{{nobody}}" in unknown["error"]
    blank = error(_post(api, "/api/prompts", {"name": "   ", "messages": [{"role": "system", "content": "x"}]}))
    assert blank["field"] == "name"
    empty = error(_post(api, "/api/prompts", {"name": "P", "messages": [{"role": "user", "content": "  "}]}))
    assert empty["field"] == "messages" and "empty" in empty["error"]
    role = error(_post(api, "/api/prompts", {"name": "P", "messages": [{"role": "wizard", "content": "x"}]}))
    assert "role" in role["error"]
    lone = [{"role": "user", "content": "x"}, {"role": "tool", "content": "shipped"}]  # answers no call: never sent
    tool = error(_post(api, "/api/prompts", {"name": "P", "messages": lone}))
    assert tool["field"] == "messages" and "message 2 (tool) is not sent" in tool["error"]
    none = error(_post(api, "/api/prompts", {"name": "P", "messages": []}))
    assert "messages" in none["error"]
    assert "name" in error(_post(api, "/api/prompts", {"messages": [{"role": "user", "content": "x"}]}))["error"]
    assert Prompt.objects.count() == 0
    prompt = _post(api, "/api/prompts", {"name": "P", "messages": [{"role": "user", "content": "x"}]}).json()
    refused = error(_put(api, f"/api/prompts/{prompt['id']}", {"messages": [{"role": "user", "content": "{{x}}"}]}))
    assert refused["field"] == "messages"
    assert error(_put(api, f"/api/prompts/{prompt['id']}", {"name": None}))["field"] == "name"
    assert api.get(f"/api/prompts/{prompt['id']}").json()["messages"] == [{"role": "user", "content": "x"}]


def test_a_prompt_in_use_is_not_deleted(api: Client, user: Any) -> None:
    prompt = create_prompt(owner=user, name="Used", messages=[("system", "x")])
    director = create_director(owner=user, name="Clients")
    agent = create_agent(director=director, name="Mood", slug="mood", prompt=prompt)
    listed = api.get(f"/api/prompts/{prompt.pk}").json()
    assert listed["usedBy"] == [{"kind": "agent", "id": agent.pk, "name": "Mood"}]
    refused = api.delete(f"/api/prompts/{prompt.pk}")
    assert refused.status_code == 409 and "Mood" in refused.json()["error"]
    assert Prompt.objects.filter(pk=prompt.pk).exists()


def test_prompts_are_owner_scoped(api: Client, user: Any, other: Any) -> None:
    theirs = create_prompt(owner=other, name="Their secret prompt", messages=[("system", "their secret words")])
    template = create_prompt(owner=other, name="Their template", messages=[("system", "t")], is_template=True)
    assert api.get("/api/prompts").json() == [] and api.get("/api/prompt-templates").json() == []
    for url in (f"/api/prompts/{theirs.pk}", f"/api/prompt-templates/{template.pk}"):
        assert api.get(url).status_code == 404
        assert _put(api, url, {"name": "hijacked"}).status_code == 404
        assert api.delete(url).status_code == 404
    theirs.refresh_from_db()
    assert theirs.name == "Their secret prompt" and Prompt.objects.filter(pk=template.pk).exists()
    # Another user's prompt cannot be given to one's own director either.
    refused = _post(api, "/api/directors", {"name": "Mine", "promptId": theirs.pk})
    assert refused.status_code == 422 and refused.json()["field"] == "promptId"


# --- directors -------------------------------------------------------------------------------------------


def test_director_crud_with_every_spec_field(api: Client, user: Any) -> None:
    model = _model(user)
    prompt = create_prompt(owner=user, name="Director prompt", messages=[("system", "Manage {{email}}")])
    jane = create_local_account(owner=user, name="jane", address="jane@company.com")
    created = _post(
        api,
        "/api/directors",
        {
            "name": "Client Manager",
            "description": "Client mail",
            "promptId": prompt.pk,
            "imprint": "Be brief.",
            "apiConfigId": model.pk,
            "accountIds": [jane.pk],
            "memoryAccess": False,
            "stepLimit": 6,
        },
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["name"] == "Client Manager" and body["promptId"] == prompt.pk and body["apiConfigId"] == model.pk
    assert body["imprint"] == "Be brief." and body["accountIds"] == [jane.pk] and body["memoryAccess"] is False
    assert body["stepLimit"] == 6 and body["enabled"] is True and body["agents"] == []
    assert b"sk-model-secret-key" not in created.content
    director = Director.objects.get(pk=body["id"], owner=user)
    assert list(director.accounts.all()) == [jane] and director.api_config == model

    changed = _put(
        api, f"/api/directors/{director.pk}", {"enabled": False, "apiConfigId": None, "accountIds": [], "stepLimit": 3}
    ).json()
    assert changed["enabled"] is False and changed["apiConfigId"] is None and changed["accountIds"] == []
    assert changed["name"] == "Client Manager" and changed["promptId"] == prompt.pk and changed["stepLimit"] == 3
    director.refresh_from_db()
    assert director.api_config is None and director.enabled is False and not director.accounts.exists()
    assert api.get(f"/api/directors/{director.pk}").json() == changed

    assert api.delete(f"/api/directors/{director.pk}").status_code == 204
    assert not Director.objects.filter(pk=director.pk).exists()
    assert api.get(f"/api/directors/{director.pk}").status_code == 404


def test_director_validation_names_the_field(api: Client, user: Any, other: Any) -> None:
    create_director(owner=user, name="Taken")
    taken = _post(api, "/api/directors", {"name": "Taken"})
    assert taken.status_code == 422 and taken.json()["field"] == "name" and "Taken" in taken.json()["error"]
    their_model = _model(other, "theirs")
    their_account = create_local_account(owner=other, name="their box")
    for body, field in (
        ({"name": "A", "apiConfigId": their_model.pk}, "apiConfigId"),
        ({"name": "A", "accountIds": [their_account.pk]}, "accountIds"),
        ({"name": "A", "promptId": 10**9}, "promptId"),
        ({"name": "   "}, "name"),
    ):
        answer = _post(api, "/api/directors", body)
        assert answer.status_code == 422 and answer.json()["field"] == field, (body, answer.content)
    limit = _post(api, "/api/directors", {"name": "A", "stepLimit": 0})
    assert limit.status_code == 422 and "stepLimit" in limit.json()["error"]
    assert list(Director.objects.filter(owner=user).values_list("name", flat=True)) == ["Taken"]
    mine = create_director(owner=user, name="Mine")
    assert _put(api, f"/api/directors/{mine.pk}", {"name": "Taken"}).json()["field"] == "name"
    assert _put(api, f"/api/directors/{mine.pk}", {"enabled": None}).json()["field"] == "enabled"
    mine.refresh_from_db()
    assert mine.name == "Mine" and mine.enabled is True


def test_directors_are_owner_scoped(api: Client, user: Any, other: Any) -> None:
    theirs = create_director(owner=other, name="Their secret director")
    assert api.get("/api/directors").json() == []
    assert api.get(f"/api/directors/{theirs.pk}").status_code == 404
    assert _put(api, f"/api/directors/{theirs.pk}", {"name": "hijacked"}).status_code == 404
    assert api.delete(f"/api/directors/{theirs.pk}").status_code == 404
    theirs.refresh_from_db()
    assert theirs.name == "Their secret director"
    # Their name is no clash for mine.
    assert _post(api, "/api/directors", {"name": "Their secret director"}).status_code == 201


# --- agents ----------------------------------------------------------------------------------------------


def test_agent_crud_keeps_the_directors_order(api: Client, user: Any) -> None:
    director = create_director(owner=user, name="Clients")
    model = _model(user)
    first = _post(
        api,
        "/api/agents",
        {
            "directorId": director.pk,
            "name": "Psychologist",
            "summary": "Mood",
            "tools": ["memory_add", "memory_search"],
            "apiConfigId": model.pk,
            "imprint": "Gentle.",
        },
    )
    assert first.status_code == 201, first.content
    psychologist = first.json()
    assert psychologist["slug"] == "psychologist" and psychologist["order"] == 0
    assert psychologist["tools"] == ["memory_add", "memory_search"] and psychologist["apiConfigId"] == model.pk
    response = _post(api, "/api/agents", {"directorId": director.pk, "name": "Response", "slug": "reply"}).json()
    third = _post(api, "/api/agents", {"directorId": director.pk, "name": "Archivist"}).json()
    assert (response["order"], third["order"]) == (1, 2)
    listed = api.get("/api/agents", {"directorId": director.pk}).json()
    assert [a["name"] for a in listed] == ["Psychologist", "Response", "Archivist"]
    assert [a["name"] for a in api.get(f"/api/directors/{director.pk}").json()["agents"]] == [
        "Psychologist",
        "Response",
        "Archivist",
    ]

    changed = _put(
        api, f"/api/agents/{response['id']}", {"summary": "Drafts replies", "tools": ["todo_add"], "enabled": False}
    ).json()
    assert changed["summary"] == "Drafts replies" and changed["tools"] == ["todo_add"] and changed["enabled"] is False
    assert changed["name"] == "Response" and changed["order"] == 1
    assert api.get(f"/api/agents/{response['id']}").json() == changed

    assert api.delete(f"/api/agents/{response['id']}").status_code == 204
    assert not Agent.objects.filter(pk=response["id"]).exists()
    assert [a["name"] for a in api.get("/api/agents").json()] == ["Psychologist", "Archivist"]
    moved = _put(api, f"/api/directors/{director.pk}/agents/order", {"agentIds": [third["id"]]}).json()
    assert [a["name"] for a in moved["agents"]] == ["Archivist", "Psychologist"]


def test_agent_validation_names_the_field(api: Client, user: Any, other: Any) -> None:
    director = create_director(owner=user, name="Clients")
    create_agent(director=director, name="Mood", slug="mood")
    clash = _post(api, "/api/agents", {"directorId": director.pk, "name": "Mood again", "slug": "mood"})
    assert clash.status_code == 422 and clash.json()["field"] == "slug"
    tool = _post(api, "/api/agents", {"directorId": director.pk, "name": "X", "tools": ["rm_rf"]})
    assert tool.status_code == 422 and "tools" in tool.json()["error"]
    slug = _post(api, "/api/agents", {"directorId": director.pk, "name": "X", "slug": "no spaces"})
    assert slug.status_code == 422 and "slug" in slug.json()["error"]
    unnamed = _post(api, "/api/agents", {"directorId": director.pk, "name": "!!!"})
    assert unnamed.status_code == 422 and unnamed.json()["field"] == "slug"
    their_director = create_director(owner=other, name="Theirs")
    foreign = _post(api, "/api/agents", {"directorId": their_director.pk, "name": "Spy"})
    assert foreign.status_code == 422 and foreign.json()["field"] == "directorId"
    assert not Agent.objects.filter(director=their_director).exists()
    their_model = _model(other, "theirs")
    model = _post(api, "/api/agents", {"directorId": director.pk, "name": "X", "apiConfigId": their_model.pk})
    assert model.status_code == 422 and model.json()["field"] == "apiConfigId"
    assert list(director.agents.values_list("slug", flat=True)) == ["mood"]
    second = create_agent(director=director, name="Other", slug="other")
    renamed = _put(api, f"/api/agents/{second.pk}", {"slug": "mood"})
    assert renamed.status_code == 422 and renamed.json()["field"] == "slug"
    second.refresh_from_db()
    assert second.slug == "other"


def test_agents_are_owner_scoped(api: Client, user: Any, other: Any) -> None:
    their_director = create_director(owner=other, name="Theirs")
    theirs = create_agent(director=their_director, name="Their secret agent", slug="secret")
    assert api.get("/api/agents").json() == []
    assert api.get("/api/agents", {"directorId": their_director.pk}).json() == []
    assert api.get(f"/api/agents/{theirs.pk}").status_code == 404
    assert _put(api, f"/api/agents/{theirs.pk}", {"name": "hijacked"}).status_code == 404
    assert api.delete(f"/api/agents/{theirs.pk}").status_code == 404
    theirs.refresh_from_db()
    assert theirs.name == "Their secret agent"


# --- memory ----------------------------------------------------------------------------------------------


def test_memory_crud_with_scopes(api: Client, user: Any) -> None:
    director = create_director(owner=user, name="Clients")
    agent = create_agent(director=director, name="Mood", slug="mood")
    made = {}
    for key, body in (
        ("global", {"content": "Jane prefers phone calls", "scope": "global", "tags": ["jane"]}),
        ("shared", {"content": "ACME invoices are due on the 5th", "scope": "shared", "directorId": director.pk}),
        ("local", {"content": "Jane sounded upset in May", "scope": "local", "agentId": agent.pk}),
        ("director", {"content": "Director note about ACME", "scope": "local", "directorId": director.pk}),
    ):
        answer = _post(api, "/api/memory", body)
        assert answer.status_code == 201, answer.content
        made[key] = answer.json()
    assert made["global"]["directorId"] is None and made["global"]["tags"] == ["jane"]
    assert made["shared"]["directorId"] == director.pk and made["shared"]["agentId"] is None
    assert made["local"]["agentId"] == agent.pk and made["local"]["directorId"] == director.pk
    assert made["local"]["agentName"] == "Mood" and made["director"]["agentId"] is None
    assert set(made["global"]) >= {"id", "content", "scope", "timestamp"}

    listing = api.get("/api/memory").json()
    assert listing["total"] == 4 and {m["id"] for m in listing["memories"]} == {m["id"] for m in made.values()}
    jane = api.get("/api/memory", {"q": "JANE"}).json()
    assert {m["id"] for m in jane["memories"]} == {made["global"]["id"], made["local"]["id"]}
    assert api.get("/api/memory", {"q": "jane upset"}).json()["memories"][0]["id"] == made["local"]["id"]
    local = api.get("/api/memory", {"scope": "local"}).json()
    assert {m["id"] for m in local["memories"]} == {made["local"]["id"], made["director"]["id"]}
    acme_local = api.get("/api/memory", {"scope": "local", "q": "acme"}).json()
    assert [m["id"] for m in acme_local["memories"]] == [made["director"]["id"]]
    of_director = api.get("/api/memory", {"directorId": director.pk}).json()
    assert of_director["total"] == 3
    page = api.get("/api/memory", {"limit": 1, "offset": 1}).json()
    assert page["total"] == 4 and len(page["memories"]) == 1

    memory_id = made["local"]["id"]
    assert api.get(f"/api/memory/{memory_id}").json() == made["local"]
    edited = _put(api, f"/api/memory/{memory_id}", {"content": "Jane was upset in May, calm in June"}).json()
    assert edited["content"] == "Jane was upset in May, calm in June" and edited["agentId"] == agent.pk
    assert edited["timestamp"] >= made["local"]["timestamp"]
    # Switching to shared keeps the director and drops the agent; to global drops both.
    shared = _put(api, f"/api/memory/{memory_id}", {"scope": "shared"}).json()
    assert shared["scope"] == "shared" and shared["directorId"] == director.pk and shared["agentId"] is None
    made_global = _put(api, f"/api/memory/{memory_id}", {"scope": "global"}).json()
    assert made_global["directorId"] is None and made_global["agentId"] is None
    back = _put(api, f"/api/memory/{memory_id}", {"scope": "local", "agentId": agent.pk}).json()
    assert back["scope"] == "local" and back["agentId"] == agent.pk and back["directorId"] == director.pk
    stored = Memory.objects.get(pk=memory_id)
    assert stored.content == "Jane was upset in May, calm in June" and stored.agent == agent

    assert api.delete(f"/api/memory/{memory_id}").status_code == 204
    assert not Memory.objects.filter(pk=memory_id).exists()
    assert api.get(f"/api/memory/{memory_id}").status_code == 404


def test_memory_content_is_encrypted_at_rest_and_still_found(api: Client, user: Any) -> None:
    created = _post(api, "/api/memory", {"content": "The vault code is tangerine", "scope": "global"}).json()
    with connection.cursor() as cursor:
        cursor.execute("SELECT content FROM orchestration_memory WHERE id = %s", [created["id"]])
        (raw,) = cursor.fetchone()
    assert "tangerine" not in raw
    assert [m["id"] for m in api.get("/api/memory", {"q": "tangerine"}).json()["memories"]] == [created["id"]]


def test_memory_validation_names_the_field(api: Client, user: Any, other: Any) -> None:
    director = create_director(owner=user, name="Clients")
    agent = create_agent(director=director, name="Mood", slug="mood")
    elsewhere = create_director(owner=user, name="Elsewhere")
    their_director = create_director(owner=other, name="Theirs")
    for body, field in (
        ({"content": "x", "scope": "shared"}, "directorId"),
        ({"content": "x", "scope": "local"}, "directorId"),
        ({"content": "x", "scope": "global", "directorId": director.pk}, "directorId"),
        ({"content": "x", "scope": "shared", "agentId": agent.pk}, "agentId"),
        ({"content": "x", "scope": "local", "agentId": agent.pk, "directorId": elsewhere.pk}, "agentId"),
        ({"content": "x", "scope": "shared", "directorId": their_director.pk}, "directorId"),
        ({"content": "   ", "scope": "global"}, "content"),
    ):
        answer = _post(api, "/api/memory", body)
        assert answer.status_code == 422 and answer.json()["field"] == field, (body, answer.content)
    bad_scope = _post(api, "/api/memory", {"content": "x", "scope": "everyone"})
    assert bad_scope.status_code == 422 and "scope" in bad_scope.json()["error"]
    assert api.get("/api/memory", {"scope": "everyone"}).status_code == 422
    assert api.get("/api/memory", {"limit": 0}).status_code == 422
    assert Memory.objects.count() == 0
    memory = _post(api, "/api/memory", {"content": "kept", "scope": "shared", "directorId": director.pk}).json()
    assert _put(api, f"/api/memory/{memory['id']}", {"scope": "local", "directorId": None}).json()["field"] == (
        "directorId"
    )
    assert _put(api, f"/api/memory/{memory['id']}", {"content": None}).json()["field"] == "content"
    assert api.get(f"/api/memory/{memory['id']}").json()["content"] == "kept"


def test_memories_are_owner_scoped(api: Client, user: Any, other: Any) -> None:
    theirs = Memory.objects.create(owner=other, scope="global", content="their secret memory")
    assert api.get("/api/memory").json() == {"total": 0, "memories": []}
    assert api.get("/api/memory", {"q": "secret"}).json()["total"] == 0
    assert api.get(f"/api/memory/{theirs.pk}").status_code == 404
    assert _put(api, f"/api/memory/{theirs.pk}", {"content": "hijacked"}).status_code == 404
    assert api.delete(f"/api/memory/{theirs.pk}").status_code == 404
    theirs.refresh_from_db()
    assert theirs.content == "their secret memory"


# --- accounts --------------------------------------------------------------------------------------------


def test_accounts_never_show_their_secrets(api: Client, user: Any, other: Any) -> None:
    imap = create_imap_account(
        owner=user,
        name="work",
        address="jane@company.com",
        host="imap.company.com",
        port=993,
        security="ssl",
        username="jane",
        password="imap-password-never-shown",
    )
    imap.smtp_password = "smtp-password-never-shown"
    imap.smtp_host = "smtp.company.com"
    imap.save(update_fields=["smtp_password", "smtp_host"])
    gmail = create_local_account(owner=user, name="gmail")
    gmail.provider = "gmail"
    gmail.credentials = {"refresh_token": "refresh-token-never-shown", "token": "access-token-never-shown"}
    gmail.save(update_fields=["provider", "credentials"])
    theirs = create_local_account(owner=other, name="their secret box")

    listed = api.get("/api/accounts")
    assert listed.status_code == 200
    accounts = {a["name"]: a for a in listed.json()}
    assert set(accounts) == {"work", "gmail"}
    work = accounts["work"]
    assert work["provider"] == "imap" and work["imapHost"] == "imap.company.com" and work["imapUsername"] == "jane"
    assert work["hasCredentials"] is True and work["hasSmtpPassword"] is True and work["smtpHost"] == "smtp.company.com"
    assert accounts["gmail"]["hasCredentials"] is True and accounts["gmail"]["hasSmtpPassword"] is False
    one = api.get(f"/api/accounts/{imap.pk}")
    assert one.json() == work
    for response in (listed, one, api.get(f"/api/accounts/{gmail.pk}")):
        text = response.content.decode()
        assert "never-shown" not in text, text
    secret_keys = {k for k in work if any(word in k.lower() for word in ("password", "token", "credential"))}
    assert secret_keys == {"hasCredentials", "hasSmtpPassword"}
    assert api.get(f"/api/accounts/{theirs.pk}").status_code == 404
    # Secrets are write-only: the API has no way to set them, and no field to read them.
    assert _put(api, f"/api/accounts/{imap.pk}", {"password": "x"}).status_code == 405


def test_the_new_routes_need_a_login() -> None:
    anonymous = Client()
    for url in ("/api/prompts", "/api/prompt-templates", "/api/agents", "/api/memory", "/api/accounts"):
        answer = anonymous.get(url)
        assert answer.status_code == 401 and answer.json() == {"error": "Authentication required"}
    assert _post(anonymous, "/api/directors", {"name": "x"}).status_code == 401


def test_lists_take_the_same_queries_for_one_or_many_rows(api: Client, user: Any) -> None:
    from django.test.utils import CaptureQueriesContext

    def add_rows(number: int) -> None:
        account = create_local_account(owner=user, name=f"box {number}")
        prompt = create_prompt(owner=user, name=f"prompt {number}", messages=[("system", "a"), ("user", "b")])
        create_prompt(owner=user, name=f"template {number}", messages=[("system", "t")], is_template=True)
        director = create_director(owner=user, name=f"director {number}")
        director.accounts.set([account])
        create_agent(director=director, name=f"agent {number}", slug=f"agent-{number}", prompt=prompt)
        Memory.objects.create(owner=user, scope="shared", director=director, content=f"memory {number}")

    urls = ("/api/directors", "/api/agents", "/api/prompts", "/api/prompt-templates", "/api/memory", "/api/accounts")

    def counts() -> dict[str, int]:
        found = {}
        for url in urls:
            with CaptureQueriesContext(connection) as queries:
                assert api.get(url).status_code == 200
            found[url] = len(queries)
        return found

    add_rows(0)
    one = counts()
    for number in range(1, 6):
        add_rows(number)
    assert counts() == one
    assert len(api.get("/api/directors").json()) == 6 and api.get("/api/memory").json()["total"] == 6
