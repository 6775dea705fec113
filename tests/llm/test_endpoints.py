"""Where a model may be called (apps/llm/endpoints.py), through the real Settings → Models pages and the client.

The probe campaign (issue 32) used "Test connection" to reach internal URLs: nobody's model is called at
link-local, multicast, unspecified or reserved addresses (cloud metadata lives at 169.254.169.254), and when
the administrator lists MAILAGENT_USER_MODEL_HOSTS, users who are not staff save, test and run models only there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import override_settings
from django.urls import reverse

from apps.llm import LLMConfig, LLMError, chat
from apps.llm.configs import llm_config
from apps.llm.endpoints import address_problem, host_problem
from apps.llm.models import ApiConfig
from tests.fakes.openai_server import FakeOpenAI, Reply


def model_form(base_url: str, **overrides: Any) -> dict[str, Any]:
    data = {
        "provider": "custom",
        "name": "Probe",
        "base_url": base_url,
        "api_key": "sk-test",
        "model": "fake-model",
        "timeout_seconds": 5,
        "max_retries": 0,
        "max_concurrency": 1,
        "input_cost_per_mtok": "0",
        "output_cost_per_mtok": "0",
    }
    data.update(overrides)
    return data


@pytest.fixture
def allowed() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default=Reply.text("OK")) as server:
        yield server  # type: ignore[misc]


@pytest.fixture
def elsewhere() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default=Reply.text("OK")) as server:
        yield server  # type: ignore[misc]


def host_of(server: FakeOpenAI) -> str:
    return server.base_url.split("//", 1)[1].split("/", 1)[0]


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/v1",
        "http://[fe80::1]:8080/v1",
        "http://[::ffff:169.254.169.254]/v1",
        "http://0.0.0.0:11434/v1",
        "http://224.0.0.1/v1",
        "http://240.0.0.1/v1",
    ],
)
def test_no_model_is_called_at_metadata_multicast_or_reserved_addresses(url: str) -> None:
    config = LLMConfig(key="probe", base_url=url, api_key="", model="m", timeout=5, max_retries=0)
    with pytest.raises(LLMError) as raised:
        chat(config, [{"role": "user", "content": "hi"}])
    assert raised.value.category == "forbidden_host"
    assert "models are never called there" in str(raised.value)


def test_ordinary_hosts_pass_the_address_rule() -> None:
    for url in (
        "http://127.0.0.1:11434/v1",
        "http://[::1]:8080/v1",
        "https://api.openai.com/v1",
        "",
        "http://10.1.2.3/v1",
    ):
        assert address_problem(url) == "", url


@pytest.mark.django_db
def test_a_metadata_address_is_refused_when_saving_and_testing(logged_in_client: Any) -> None:
    url = "http://169.254.169.254/v1"
    page = logged_in_client.post(reverse("settings:models"), model_form(url))
    assert page.status_code == 400
    assert "169.254.169.254 is a link-local address" in page.content.decode()
    assert not ApiConfig.objects.exists()
    tested = logged_in_client.post(reverse("settings:model_test"), model_form(url), HTTP_HX_REQUEST="true")
    assert "169.254.169.254 is a link-local address" in tested.content.decode()


@pytest.mark.django_db
def test_the_administrators_host_list_binds_users_who_are_not_staff(
    logged_in_client: Any, user: Any, allowed: FakeOpenAI, elsewhere: FakeOpenAI
) -> None:
    with override_settings(LLM_USER_MODEL_HOSTS=[host_of(allowed)]):
        tested = logged_in_client.post(
            reverse("settings:model_test"), model_form(elsewhere.base_url), HTTP_HX_REQUEST="true"
        ).content.decode()
        assert f"Models can only be added at {host_of(allowed)} on this server" in tested
        assert elsewhere.chat_requests() == []  # refused before any connection: no answer, no timing
        refused = logged_in_client.post(reverse("settings:models"), model_form(elsewhere.base_url))
        assert refused.status_code == 400 and "MAILAGENT_USER_MODEL_HOSTS" in refused.content.decode()

        tested = logged_in_client.post(
            reverse("settings:model_test"), model_form(allowed.base_url), HTTP_HX_REQUEST="true"
        ).content.decode()
        assert "Connected." in tested or "answered with the model" in tested
        saved = logged_in_client.post(reverse("settings:models"), model_form(allowed.base_url))
        assert saved.status_code == 302
        config = ApiConfig.objects.get(owner=user)
        edited = logged_in_client.post(
            reverse("settings:model_edit", args=[config.pk]), model_form(elsewhere.base_url, api_key="")
        )
        assert edited.status_code == 400
        config.refresh_from_db()
        assert config.base_url == allowed.base_url

        # A model saved before the list existed is neither tested nor run.
        ApiConfig.objects.filter(pk=config.pk).update(base_url=elsewhere.base_url)
        config.refresh_from_db()
        page = logged_in_client.post(reverse("settings:model_test_saved", args=[config.pk])).content.decode()
        assert "Models can only be added at" in page
        with pytest.raises(LLMError) as raised:
            llm_config(config)
        assert raised.value.category == "forbidden_host"
    assert elsewhere.chat_requests() == []


@pytest.mark.django_db
def test_staff_are_not_bound_by_the_host_list(staff_user: Any, elsewhere: FakeOpenAI) -> None:
    with override_settings(LLM_USER_MODEL_HOSTS=["models.internal:443"]):
        assert host_problem(elsewhere.base_url, user=staff_user) == ""
        config = ApiConfig.objects.create(owner=staff_user, name="S", base_url=elsewhere.base_url, model="m")
        assert chat(llm_config(config), [{"role": "user", "content": "hi"}]).content == "OK"
