"""Settings pages through the real URLconf: models (write-only keys, test connection), directors and
agents (templates, tools, ordering), filters (edit, reorder, toggle), general settings, tenancy."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from apps.llm.models import ApiConfig
from apps.orchestration.models import Agent, Director, FilesystemRoot, OrchestrationSettings
from apps.routing.models import Filter
from apps.setup.actions import create_director_from_template
from apps.setup.director_templates import CLIENT_SUPPORT
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.services import free_port

SECRET = "sk-live-DO-NOT-SHOW-1234567890"


def model_form(**overrides: Any) -> dict[str, Any]:
    data = {
        "provider": "custom",
        "name": "Local",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": SECRET,
        "model": "fake-model",
        "timeout_seconds": 30,
        "max_retries": 2,
        "max_concurrency": 2,
        "input_cost_per_mtok": "0",
        "output_cost_per_mtok": "0",
    }
    data.update(overrides)
    return data


@pytest.mark.django_db
def test_api_keys_are_write_only(logged_in_client: Any, user: Any) -> None:
    response = logged_in_client.post(reverse("settings:models"), model_form())
    assert response.status_code == 302
    config = ApiConfig.objects.get(owner=user)
    assert config.api_key == SECRET
    for url in (reverse("settings:models"), reverse("settings:model_edit", args=[config.pk])):
        page = logged_in_client.get(url).content.decode()
        assert SECRET not in page and SECRET[-8:] not in page
    edit = logged_in_client.get(reverse("settings:model_edit", args=[config.pk])).content.decode()
    assert 'name="api_key"' in edit and "Leave blank to keep it" in edit
    # A blank key keeps the stored one; other fields change.
    response = logged_in_client.post(
        reverse("settings:model_edit", args=[config.pk]), model_form(api_key="", model="other-model")
    )
    assert response.status_code == 302
    config.refresh_from_db()
    assert config.api_key == SECRET and config.model == "other-model"
    # A typed key replaces it, and the error page of an invalid form does not echo it either.
    response = logged_in_client.post(
        reverse("settings:model_edit", args=[config.pk]), model_form(api_key="sk-new-secret-abc", timeout_seconds=0)
    )
    assert response.status_code == 400 and "sk-new-secret-abc" not in response.content.decode()
    logged_in_client.post(reverse("settings:model_edit", args=[config.pk]), model_form(api_key="sk-new-secret-abc"))
    config.refresh_from_db()
    assert config.api_key == "sk-new-secret-abc"


@pytest.mark.django_db
def test_a_duplicate_model_name_is_a_form_error(logged_in_client: Any, user: Any) -> None:
    logged_in_client.post(reverse("settings:models"), model_form())
    response = logged_in_client.post(reverse("settings:models"), model_form())
    assert response.status_code == 400 and "already have an API config named" in response.content.decode()
    assert ApiConfig.objects.filter(owner=user).count() == 1


@pytest.mark.django_db
def test_test_connection_calls_the_model_once(logged_in_client: Any, user: Any, fake_llm: FakeOpenAI) -> None:
    fake_llm.script(Reply.text("OK"))
    response = logged_in_client.post(
        reverse("settings:model_test"),
        model_form(base_url=fake_llm.base_url, api_key="sk-typed"),
        HTTP_HX_REQUEST="true",
    )
    page = response.content.decode()
    assert response.status_code == 200 and "Connection works." in page and fake_llm.base_url in page
    # One one-token call, then one short call that measures the speed (tests/setup/test_local_models.py).
    assert [r["max_tokens"] for r in fake_llm.chat_requests()] == [1, 32]
    assert fake_llm.api_keys == ["Bearer sk-typed", "Bearer sk-typed"]
    # On a saved config a blank key field tests with the stored key.
    config = ApiConfig.objects.create(
        owner=user, name="Saved", base_url=fake_llm.base_url, api_key="sk-stored", model="m"
    )
    fake_llm.script(Reply.text("OK"), Reply.text("1 2 3"), Reply.text("OK"), Reply.text("1 2 3"))
    logged_in_client.post(
        reverse("settings:model_test"), model_form(base_url=fake_llm.base_url, api_key="", config_id=config.pk)
    )
    logged_in_client.post(reverse("settings:model_test_saved", args=[config.pk]))
    assert fake_llm.api_keys[2:] == ["Bearer sk-stored"] * 4


@pytest.mark.django_db
def test_a_stored_key_is_only_sent_to_its_own_configs_url(
    logged_in_client: Any, user: Any, django_user_model: Any, fake_llm: FakeOpenAI
) -> None:
    """Test connection with a blank key field used the stored key with whatever URL was posted: the key went
    to any host the user named. Another user's config id answers 404 without any call."""
    config = ApiConfig.objects.create(
        owner=user, name="Saved", base_url=fake_llm.base_url, api_key="sk-stored", model="m"
    )
    elsewhere = FakeOpenAI()
    elsewhere.start()
    try:
        response = logged_in_client.post(
            reverse("settings:model_test"), model_form(base_url=elsewhere.base_url, api_key="", config_id=config.pk)
        )
        page = response.content.decode()
        assert elsewhere.api_keys == [] and fake_llm.api_keys == []
        assert "Not tested." in page
        assert f"The saved key is only sent to the URL it was saved with ({fake_llm.base_url})" in page
        stranger = django_user_model.objects.create_user(username="mallory", email="mallory@example.com")
        theirs = ApiConfig.objects.create(
            owner=stranger, name="Theirs", base_url=elsewhere.base_url, api_key="k", model="m"
        )
        for url in (reverse("settings:model_test_saved", args=[theirs.pk]), reverse("settings:model_test")):
            refused = logged_in_client.post(
                url, model_form(base_url=elsewhere.base_url, api_key="", config_id=theirs.pk)
            )
            assert refused.status_code == 404
        assert elsewhere.api_keys == []
    finally:
        elsewhere.stop()


@pytest.mark.django_db
def test_a_dead_endpoint_is_named_with_what_to_do(logged_in_client: Any) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    response = logged_in_client.post(reverse("settings:model_test"), model_form(base_url=url))
    page = response.content.decode()
    assert "Connection failed." in page
    assert f"at {url} (API config “Local”) refused the connection: is it running?" in page


@pytest.mark.django_db
def test_director_from_template_with_agents_tools_and_order(logged_in_client: Any, user: Any) -> None:
    config = ApiConfig.objects.create(owner=user, name="M", base_url="http://127.0.0.1:9/v1", model="m")
    response = logged_in_client.post(
        reverse("settings:director_add"), {"template": "client-support", "name": "Support", "api_config": config.pk}
    )
    director = Director.objects.get(owner=user, name="Support")
    assert response.status_code == 302 and director.api_config == config and director.prompt is not None
    agents = list(director.agents.order_by("order"))
    assert [a.slug for a in agents] == ["psychologist", "response-agent"]
    assert agents[0].allowed_tools == ["memory_search", "memory_add"] and agents[0].prompt is not None
    page = logged_in_client.get(reverse("settings:director", args=[director.pk])).content.decode()
    assert "agent__psychologist" in page and "Psychologist" in page
    # Tools as checkboxes, each with the description the model sees.
    agent_page = logged_in_client.get(reverse("settings:agent", args=[agents[1].pk])).content.decode()
    assert 'value="calendar_read"' in agent_page and "checked" in agent_page and "memory_edit" in agent_page
    response = logged_in_client.post(
        reverse("settings:agent", args=[agents[1].pk]),
        {
            "name": "Responder",
            "slug": "responder",
            "summary": "s",
            "allowed_tools": ["memory_edit"],
            "step_limit": 5,
            "enabled": "on",
        },
    )
    assert response.status_code == 302
    agents[1].refresh_from_db()
    assert agents[1].allowed_tools == ["memory_edit"] and agents[1].slug == "responder"
    # Reorder by the keyboard/button fallback and by the drag-and-drop list of ids.
    logged_in_client.post(
        reverse("settings:agents_order", args=[director.pk]), {"move": agents[1].pk, "direction": "up"}
    )
    assert list(director.agents.order_by("order").values_list("slug", flat=True)) == ["responder", "psychologist"]
    logged_in_client.post(
        reverse("settings:agents_order", args=[director.pk]),
        {"order": [agents[0].pk, agents[1].pk]},
        HTTP_HX_REQUEST="true",
    )
    assert list(director.agents.order_by("order").values_list("slug", flat=True)) == ["psychologist", "responder"]
    # Same name twice: a form error, nothing created.
    response = logged_in_client.post(
        reverse("settings:director_add"), {"template": "triage", "name": "Support", "api_config": config.pk}
    )
    assert response.status_code == 400 and Director.objects.filter(owner=user).count() == 1


@pytest.mark.django_db
def test_director_settings_save_accounts_and_memory_access(logged_in_client: Any, user: Any, account: Any) -> None:
    director = create_director_from_template(owner=user, template=CLIENT_SUPPORT, name="Support", api_config=None)
    response = logged_in_client.post(
        reverse("settings:director", args=[director.pk]),
        {"name": "Support 2", "description": "d", "accounts": [account.pk], "step_limit": 9, "imprint": "Be brief."},
    )
    assert response.status_code == 302
    director.refresh_from_db()
    assert director.name == "Support 2" and not director.enabled and not director.memory_access
    assert list(director.accounts.all()) == [account] and director.step_limit == 9 and director.imprint == "Be brief."


@pytest.mark.django_db
def test_one_filters_page_the_old_address_redirects_and_a_filter_is_deleted_from_its_page(
    logged_in_client: Any, director: Any, add_filter: Any
) -> None:
    old = logged_in_client.get("/routing/filters/?last=5")
    assert old.status_code == 301 and old["Location"] == "/settings/filters/?last=5"
    item = add_filter(director("Boss"), "subject", "invoice")
    edit = logged_in_client.get(reverse("settings:filter", args=[item.pk])).content.decode()
    delete_url = reverse("routing:filter_delete", args=[item.pk])
    assert f'action="{delete_url}"' in edit and "data-confirm=" in edit
    response = logged_in_client.post(delete_url, follow=True)
    assert response.redirect_chain == [(reverse("settings:filters"), 302)]
    assert not Filter.objects.filter(pk=item.pk).exists()
    assert "Filter /invoice/ deleted." in response.content.decode()


@pytest.mark.django_db
def test_filters_edit_reorder_toggle(logged_in_client: Any, user: Any, director: Any, add_filter: Any) -> None:
    boss = director("Boss")
    first, second = add_filter(boss, "from", "alpha"), add_filter(boss, "from", "beta")
    page = logged_in_client.get(reverse("settings:filters")).content.decode()
    assert "/alpha/" in page and "/beta/" in page and reverse("routing:filters_test") in page
    response = logged_in_client.post(
        reverse("settings:filter", args=[first.pk]),
        {"director": boss.pk, "field": "subject", "regex": "gamma", "case_insensitive": "on", "description": "x"},
    )
    assert response.status_code == 302
    first.refresh_from_db()
    assert (first.field, first.regex, first.enabled) == ("subject", "gamma", False)
    bad = logged_in_client.post(
        reverse("settings:filter", args=[first.pk]), {"director": boss.pk, "field": "subject", "regex": "(unclosed"}
    )
    assert bad.status_code == 400 and "Invalid regex" in bad.content.decode()
    first.refresh_from_db()
    assert first.regex == "gamma"  # nothing lost
    logged_in_client.post(reverse("settings:filters_order"), {"order": [second.pk, first.pk]})
    assert list(Filter.objects.order_by("order").values_list("pk", flat=True)) == [second.pk, first.pk]
    logged_in_client.post(reverse("settings:filter_toggle", args=[first.pk]))
    first.refresh_from_db()
    assert first.enabled

    # The create forms (here and the wizard share FilterForm) take the attachment switch too.
    assert 'name="save_attachments"' in page
    # The pattern help is markup: "Name <address>" shown as text (not an <address> element), examples as code.
    for shown in (page, logged_in_client.get(reverse("settings:filter", args=[first.pk])).content.decode()):
        assert "“Name &lt;address&gt;”" in shown and "<code>client.*@domain\\.com</code>" in shown
    created = logged_in_client.post(
        reverse("settings:filters"),
        {"director": boss.pk, "field": "from", "regex": "invoices@", "save_attachments": "on"},
    )
    assert created.status_code == 302
    assert Filter.objects.get(regex="invoices@").save_attachments
    assert not Filter.objects.get(regex="beta").save_attachments


@pytest.mark.django_db
def test_general_settings_need_the_right_role(logged_in_client: Any, staff_user: Any, tmp_path: Any) -> None:
    staff_client = Client()
    staff_client.force_login(staff_user)
    page = logged_in_client.get(reverse("settings:general")).content.decode()
    assert "Only an administrator" in page and 'name="path"' not in page
    assert (
        logged_in_client.post(
            reverse("settings:general"), {"section": "timeout", "session_timeout_minutes": 5}
        ).status_code
        == 403
    )
    assert logged_in_client.post(reverse("settings:general"), {"section": "root", "path": "/"}).status_code == 403
    staff_client.post(reverse("settings:general"), {"section": "timeout", "session_timeout_minutes": 5})
    assert OrchestrationSettings.objects.get(pk=1).session_timeout_minutes == 5
    bad = staff_client.post(reverse("settings:general"), {"section": "root", "path": "relative/dir"})
    assert bad.status_code == 400 and "absolute path" in bad.content.decode()
    staff_client.post(reverse("settings:general"), {"section": "root", "path": str(tmp_path)})
    assert FilesystemRoot.objects.get().path == str(tmp_path)


@pytest.mark.django_db
def test_other_users_objects_are_404(client: Any, user: Any, director: Any, add_filter: Any) -> None:
    config = ApiConfig.objects.create(owner=user, name="Mine", model="m", api_key=SECRET)
    mine = create_director_from_template(owner=user, template=CLIENT_SUPPORT, name="Mine", api_config=config)
    agent = Agent.objects.filter(director=mine).first()
    assert agent is not None
    item = add_filter(mine, "from", "x")
    other = get_user_model().objects.create_user(username="other", email="other@example.com", password="pw-123456789")
    client.force_login(other)
    gets = [
        reverse("settings:model_edit", args=[config.pk]),
        reverse("settings:director", args=[mine.pk]),
        reverse("settings:agent", args=[agent.pk]),
        reverse("settings:filter", args=[item.pk]),
    ]
    posts = [
        reverse("settings:model_test_saved", args=[config.pk]),
        reverse("settings:model_delete", args=[config.pk]),
        reverse("settings:director_delete", args=[mine.pk]),
        reverse("settings:agent_delete", args=[agent.pk]),
        reverse("settings:agent_add", args=[mine.pk]),
        reverse("settings:agents_order", args=[mine.pk]),
        reverse("settings:filter_toggle", args=[item.pk]),
    ]
    assert all(client.get(url).status_code == 404 for url in gets)
    assert all(client.post(url).status_code == 404 for url in posts)
    response = client.post(reverse("settings:model_test"), model_form(api_key="", config_id=config.pk))
    assert response.status_code == 404
    client.post(reverse("settings:filters_order"), {"order": [item.pk]})
    lists = [reverse("settings:models"), reverse("settings:directors"), reverse("settings:filters")]
    assert all("Mine" not in client.get(url).content.decode() for url in lists)
    assert ApiConfig.objects.filter(pk=config.pk).exists() and Director.objects.filter(pk=mine.pk).exists()
