"""Ask's model is an ApiConfig the user picks on /ask/settings/ (with "Test connection"); the environment
variables are only a fallback, and the pages say which one is used and how to add one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from apps.ask import actions
from apps.ask.llm import ask_llm_config
from apps.ask.models import AskSettings, RunStatus
from apps.llm.actions import create_api_config
from tests.fakes.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI(default=Reply.text("OK"))
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


def test_without_a_model_the_pages_say_how_to_add_one(logged_in_client: Any, settings: Any) -> None:
    settings.ASK_LLM = {}
    panel = logged_in_client.get("/ask/").content.decode()
    assert "No language model" in panel and 'href="/settings/models/"' in panel and 'href="/ask/settings/"' in panel

    page = logged_in_client.get("/ask/settings/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Ask has no language model" in text
    assert 'data-testid="ask-no-configs"' in text and 'href="/settings/models/"' in text

    probe = logged_in_client.post("/ask/settings/test/").content.decode()
    assert "Not tested" in probe and "choose one above" in probe


def test_the_chosen_api_config_is_used_and_tested(
    logged_in_client: Any, user: Any, server: FakeOpenAI, settings: Any
) -> None:
    settings.ASK_LLM = {"base_url": "http://127.0.0.1:9/v1", "api_key": "env", "model": "env-model"}
    page = logged_in_client.get("/ask/settings/").content.decode()
    assert "server's fallback" in page and "env-model" in page and "MAILAGENT_ASK_LLM_" in page

    config = create_api_config(
        owner=user, name="Local fake", base_url=server.base_url, api_key="sk-ask-settings", model="cfg-model"
    )
    saved = logged_in_client.post("/ask/settings/", {"api_config": str(config.pk)})
    assert saved.status_code == 302
    assert AskSettings.objects.get(owner=user).api_config_id == config.pk
    llm = ask_llm_config(user)
    assert llm is not None and llm.model == "cfg-model" and llm.api_key == "sk-ask-settings"

    page = logged_in_client.get("/ask/settings/?saved=1").content.decode()
    assert "Ask answers with <strong>Local fake (cfg-model)</strong>" in page and "Saved." in page
    assert "Model: Local fake (cfg-model)." in logged_in_client.get("/ask/").content.decode()

    probe = logged_in_client.post("/ask/settings/test/").content.decode()
    assert "Connection works" in probe
    request = server.chat_requests()[-1]
    assert request["model"] == "cfg-model" and request["max_tokens"] == 1
    assert server.api_keys[-1] == "Bearer sk-ask-settings"

    # A run asks the chosen model (here its query rewriting), not the environment's.
    run = actions.create_ask_run(owner=user, question="when is the invoice due?")
    finished = actions.execute_ask_run(run_id=run.pk)
    assert finished is not None and finished.status == RunStatus.DONE
    assert any(r.get("model") == "cfg-model" for r in server.chat_requests()[1:])

    cleared = logged_in_client.post("/ask/settings/", {"api_config": ""})
    assert cleared.status_code == 302
    assert ask_llm_config(user) is not None and ask_llm_config(user).model == "env-model"  # type: ignore[union-attr]


def test_a_failing_connection_says_what_happened(logged_in_client: Any, user: Any, server: FakeOpenAI) -> None:
    server.script(Reply.failure(401, "invalid api key"))
    config = create_api_config(owner=user, name="Bad key", base_url=server.base_url, api_key="sk-x", model="m")
    logged_in_client.post("/ask/settings/", {"api_config": str(config.pk)})
    probe = logged_in_client.post("/ask/settings/test/").content.decode()
    assert "Connection failed (HTTP 401)" in probe


def test_another_users_model_cannot_be_chosen(logged_in_client: Any, user: Any) -> None:
    other = get_user_model().objects.create_user(username="other", email="o@example.com", password="x" * 20)
    theirs = create_api_config(owner=other, name="Theirs", base_url="http://127.0.0.1:9/v1", api_key="k", model="m")
    assert "Theirs" not in logged_in_client.get("/ask/settings/").content.decode()
    assert logged_in_client.post("/ask/settings/", {"api_config": str(theirs.pk)}).status_code == 404
    assert logged_in_client.post("/ask/settings/", {"api_config": "abc"}).status_code == 422
    assert not AskSettings.objects.filter(owner=user, api_config__isnull=False).exists()


def test_test_connection_tests_the_model_selected_before_it_is_saved(
    logged_in_client: Any, user: Any, server: FakeOpenAI, settings: Any
) -> None:
    # A newcomer picked a model and pressed Test connection: the saved choice was tested, not theirs.
    settings.ASK_LLM = {}
    saved = create_api_config(owner=user, name="Old", base_url="http://127.0.0.1:9/v1", api_key="k", model="old-model")
    chosen = create_api_config(owner=user, name="New", base_url=server.base_url, api_key="k2", model="new-model")
    actions.choose_ask_model(owner=user, api_config_id=saved.pk)
    page = logged_in_client.get("/ask/settings/").content.decode()
    assert 'hx-include="#ask-api-config"' in page

    probe = logged_in_client.post("/ask/settings/test/", {"api_config": str(chosen.pk)}).content.decode()
    assert "Connection works" in probe
    assert [request["model"] for request in server.chat_requests()] == ["new-model"]
    assert AskSettings.objects.get(owner=user).api_config_id == saved.pk  # testing saves nothing

    none = logged_in_client.post("/ask/settings/test/", {"api_config": ""}).content.decode()
    assert "Not tested" in none and "Choose a model above" in none
    other = get_user_model().objects.create_user(username="other", email="other@example.com")
    theirs = create_api_config(owner=other, name="Theirs", base_url=server.base_url, api_key="k3", model="their-model")
    refused = logged_in_client.post("/ask/settings/test/", {"api_config": str(theirs.pk)}).content.decode()
    assert "not one of yours" in refused and len(server.chat_requests()) == 1
    current = logged_in_client.post("/ask/settings/test/").content.decode()  # no select posted: the saved one
    assert "Connection failed" in current and len(server.chat_requests()) == 1
