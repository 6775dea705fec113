"""Which language model Ask answers with. One function, so the lookup can later move to an ApiConfig row
chosen for Ask without touching the pipeline."""

from __future__ import annotations

from django.conf import settings

from mailagent.llm import LLMConfig


def ask_llm_config() -> LLMConfig | None:
    """settings.ASK_LLM (MAILAGENT_ASK_LLM_BASE_URL / _API_KEY / _MODEL); None → extractive answers."""
    options = dict(getattr(settings, "ASK_LLM", {}) or {})
    model = str(options.get("model") or "").strip()
    base_url = str(options.get("base_url") or "").strip()
    if not model or not base_url:
        return None
    return LLMConfig(
        key=f"ask:{base_url}:{model}",
        base_url=base_url,
        api_key=str(options.get("api_key") or ""),
        model=model,
        timeout=float(options.get("timeout") or 60.0),
        max_retries=int(options.get("max_retries") or 2),
        name="Ask Inbox",
    )
