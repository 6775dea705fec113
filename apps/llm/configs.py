"""From an ApiConfig row to what the client needs: the one conversion every app uses (orchestration's
director and agents, Ask, the organize agent and its guideline lines), so they share one concurrency limit
per config, the same backoff, and the same clear error when the stored key cannot be decrypted."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings

from apps.llm.client import LLMConfig, LLMError
from apps.llm.discovery import local_server
from apps.llm.endpoints import host_problem
from apps.llm.models import ApiConfig
from mailagent.crypto import SecretDecryptionError, reveal


class UndecryptableApiKey(SecretDecryptionError, LLMError):
    """The stored API key cannot be decrypted by this server. An LLMError (category "auth"), so every caller's
    provider-error path reports it, and a SecretDecryptionError, so code that checks secrets recognises it."""

    def __init__(self, api_config: ApiConfig, reason: str) -> None:
        message = (
            f"the API key of “{api_config.name}” cannot be decrypted with this server's VX_MAILAGENT_KEY; "
            "enter it again under Settings → Models"
        )
        LLMError.__init__(self, message, category="auth", detail=reason)
        self.api_config_id = api_config.pk


def concurrency_key(api_config: ApiConfig) -> str:
    """Calls through the same ApiConfig share one concurrency limit, whichever app makes them. A model server
    on this machine or the local network is shared further: every configuration that reaches it (two users'
    configs, a director model and an Ask model on the same Ollama) waits in the server's one line, since they
    all compete for its cores. A hosted API limits each key on its own: its configs keep a line each."""
    return queue_key(api_config.base_url, f"apiconfig:{api_config.pk}")


def queue_key(base_url: str, otherwise: str) -> str:
    """The generation queue a model at this URL waits in: its server's when it is local, else `otherwise`."""
    server = local_server(base_url)
    return f"server:{server}" if server else otherwise


def llm_config(api_config: ApiConfig) -> LLMConfig:
    """The client configuration for this ApiConfig; raises UndecryptableApiKey instead of sending the
    "cannot decrypt" placeholder as the key (the provider would answer 401 and hide the reason), and an
    LLMError (category "forbidden_host") for a URL its owner may not use (apps/llm/endpoints.py)."""
    problem = host_problem(api_config.base_url, user=api_config.owner)
    if problem:
        raise LLMError(f"“{api_config.name}”: {problem}", category="forbidden_host")
    try:
        api_key = reveal(api_config.api_key) or ""
    except SecretDecryptionError as exc:
        raise UndecryptableApiKey(api_config, str(exc)) from exc
    return LLMConfig(
        key=concurrency_key(api_config),
        base_url=api_config.base_url,
        api_key=api_key,
        model=api_config.model,
        timeout=float(api_config.timeout_seconds),
        max_concurrency=api_config.max_concurrency,
        max_retries=api_config.max_retries,
        backoff_base=float(getattr(settings, "LLM_BACKOFF_BASE_SECONDS", 0.5)),
        name=api_config.name,
        tool_call_mode=api_config.tool_call_mode,
        max_output_tokens=api_config.max_output_tokens or None,
    )


def estimate_cost(api_config: ApiConfig | None, prompt_tokens: int, completion_tokens: int) -> Decimal | None:
    if api_config is None or not (api_config.input_cost_per_mtok or api_config.output_cost_per_mtok):
        return None
    million = Decimal(1_000_000)
    return (
        Decimal(prompt_tokens) * api_config.input_cost_per_mtok
        + Decimal(completion_tokens) * api_config.output_cost_per_mtok
    ) / million
