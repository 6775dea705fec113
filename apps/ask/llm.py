"""Which language model Ask answers with: the ApiConfig the user picked on the Ask settings page
(/ask/settings/); when none is picked, the server-wide MAILAGENT_ASK_LLM_* environment variables as a
fallback; otherwise none (extractive answers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from django.conf import settings

from apps.ask.models import AskSettings
from apps.llm import LLMConfig, LLMError
from apps.llm.configs import llm_config, queue_key


@dataclass(frozen=True, slots=True)
class AskModel:
    """The model Ask uses for one user and where that choice comes from (shown on the page)."""

    source: Literal["api_config", "environment", "none"]
    config: LLMConfig | None
    label: str  # "Work GPT (gpt-4o-mini)", "gpt-4o-mini at http://… (environment)", ""
    api_config_id: int | None = None


def environment_llm_config() -> LLMConfig | None:
    """settings.ASK_LLM (MAILAGENT_ASK_LLM_BASE_URL / _API_KEY / _MODEL), the fallback."""
    options = dict(getattr(settings, "ASK_LLM", {}) or {})
    model = str(options.get("model") or "").strip()
    base_url = str(options.get("base_url") or "").strip()
    if not model or not base_url:
        return None
    return LLMConfig(
        key=queue_key(base_url, f"ask:{base_url}:{model}"),
        base_url=base_url,
        api_key=str(options.get("api_key") or ""),
        model=model,
        timeout=float(options.get("timeout") or 60.0),
        max_retries=int(options.get("max_retries") or 2),
        name="Ask Inbox",
    )


def ask_model(owner: Any) -> AskModel:
    """The model Ask uses now for `owner`: the saved choice, else the environment's fallback, else none."""
    chosen = (
        AskSettings.objects.filter(owner_id=getattr(owner, "pk", owner)).select_related("api_config").first()
        if owner is not None
        else None
    )
    return model_for_choice(chosen.api_config if chosen is not None else None)


def model_for_choice(api_config: Any) -> AskModel:
    """The model Ask would use with this choice of the user's ApiConfig (None: no choice), saved or not (the
    settings page tests the one selected before it is saved)."""
    if api_config is not None:
        label = f"{api_config.name} ({api_config.model})"
        try:
            config: LLMConfig | None = llm_config(api_config)
        except LLMError as exc:  # a key this server cannot decrypt, or a host its owner may not use
            config = None  # answered extractively; the page says why, in the words a director run uses
            label += f" — {exc}"
        return AskModel(source="api_config", config=config, label=label, api_config_id=api_config.pk)
    fallback = environment_llm_config()
    if fallback is not None:
        return AskModel(
            source="environment",
            config=fallback,
            label=f"{fallback.model} at {fallback.base_url} (MAILAGENT_ASK_LLM_* environment variables)",
        )
    return AskModel(source="none", config=None, label="")


def ask_llm_config(owner: Any = None) -> LLMConfig | None:
    return ask_model(owner).config
