"""A run whose model endpoint refuses the connection fails once, at once, and says where and what to do."""

from __future__ import annotations

from typing import Any

import pytest

from apps.llm.models import ApiConfig
from apps.orchestration.models import ProviderEvent, Run, RunStatus
from apps.setup.actions import create_director_from_template
from apps.setup.director_templates import CLIENT_SUPPORT
from tests.services import free_port


@pytest.mark.django_db
def test_a_refused_endpoint_fails_the_run_once_naming_it(user: Any, add_filter: Any, store_mail: Any) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    config = ApiConfig.objects.create(owner=user, name="Laptop", base_url=url, model="llama3.2", max_retries=4)
    director = create_director_from_template(owner=user, template=CLIENT_SUPPORT, name="Support", api_config=config)
    add_filter(director, "subject", "help")
    run = Run.objects.get(message=store_mail(subject="help please"))
    assert run.status == RunStatus.FAILED
    assert f"The OpenAI-compatible endpoint at {url} (API config “Laptop”) refused the connection" in run.error
    assert "is it running?" in run.error
    assert ProviderEvent.objects.filter(run=run, kind="error", category="refused").count() == 1
    assert ProviderEvent.objects.filter(run=run, kind="request").count() == 1  # one attempt, not five
