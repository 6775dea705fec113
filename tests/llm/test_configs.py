"""One conversion from ApiConfig to the client's configuration for every app: a director run, Ask and the
organize agent give the same clear message when the stored key cannot be decrypted (the organize agent had
sent the "cannot decrypt" placeholder to the provider as its key), and share one concurrency limit and the
same backoff (the organize agent had its own key, `api-config:`, and no backoff)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apps.ask import actions as ask_actions
from apps.ask.llm import ask_llm_config, ask_model
from apps.llm.actions import create_api_config
from apps.llm.configs import llm_config
from apps.llm.models import ApiConfig
from apps.orchestration.models import Run, RunStatus
from apps.organization import actions as organization_actions
from apps.organization.agent import agent_proposal, llm_config_for
from apps.organization.library import get_library, get_settings
from apps.organization.models import SuggestionSource
from apps.organization.proposals import Proposal
from apps.organization.roots import library_base
from apps.setup.actions import create_director_from_template
from apps.setup.director_templates import CLIENT_SUPPORT
from mailagent.pytest_env import TEST_ENCRYPTION_KEY
from tests.fakes.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.django_db

OTHER_KEY = "a1" * 32
CLEAR_MESSAGE = (
    "the API key of “Work model” cannot be decrypted with this server's VX_MAILAGENT_KEY; "
    "enter it again under Settings → Models"
)


@pytest.fixture
def fake_llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default=Reply.text("OK")) as server:
        yield server  # type: ignore[misc]


@pytest.fixture
def config(user: Any, fake_llm: FakeOpenAI, tmp_path: Path) -> ApiConfig:
    """The owner's model, chosen by a director, by Ask and by the organize agent."""
    created = create_api_config(
        owner=user, name="Work model", base_url=fake_llm.base_url, api_key="sk-work", model="m", max_retries=0
    )
    ask_actions.choose_ask_model(owner=user, api_config_id=created.pk)
    organization_actions.update_settings(
        owner=user, changes={"root": str(library_base(user.pk) / "library"), "api_config_id": created.pk}
    )
    return created


def test_all_three_share_one_concurrency_limit_and_the_backoff(
    user: Any, config: ApiConfig, settings: Any, fake_llm: FakeOpenAI
) -> None:
    settings.LLM_BACKOFF_BASE_SECONDS = 0.125
    director = llm_config(config)
    ask = ask_llm_config(user)
    organize = llm_config_for(get_settings(owner=user))
    assert ask is not None and organize is not None
    assert director == ask == organize
    # The model server is on this machine: every config that reaches it waits in the server's one line.
    assert director.key == f"server:127.0.0.1:{fake_llm.port}" and director.backoff_base == 0.125


def test_an_undecryptable_key_gives_the_same_clear_message_everywhere(
    user: Any, config: ApiConfig, fake_llm: FakeOpenAI, settings: Any, add_filter: Any, store_mail: Any
) -> None:
    director = create_director_from_template(owner=user, template=CLIENT_SUPPORT, name="Support", api_config=config)
    add_filter(director, "subject", "help")
    settings.VX_MAILAGENT_KEY = OTHER_KEY  # the key that sealed the API key is no longer configured
    assert settings.VX_MAILAGENT_KEY != TEST_ENCRYPTION_KEY

    run = Run.objects.get(message=store_mail(subject="help please"))
    assert run.status == RunStatus.FAILED
    assert CLEAR_MESSAGE in run.error

    chosen = ask_model(user)
    assert chosen.config is None and CLEAR_MESSAGE in chosen.label

    library = get_library(owner=user)
    file = organization_actions.save_upload(library=library, name="policy.txt", chunks=[b"Insurance policy."])
    candidate = Proposal(folder="finance", confidence=0.6, reasoning="Learned from your filing.")
    proposal = agent_proposal(file=file, settings=get_settings(owner=user), candidate=candidate, exclude=[])
    assert proposal.source == SuggestionSource.CLASSIFIER and proposal.folder == "finance"
    assert CLEAR_MESSAGE in proposal.reasoning

    assert fake_llm.requests == []  # the placeholder never went to the provider as a key
