"""Writes for ApiConfig (Settings → Models, the setup wizard): typed, keyword-only; a name clash raises a
ValidationError on that field."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from apps.llm.discovery import is_local_url
from apps.llm.endpoints import host_problem
from apps.llm.models import ApiConfig

# A model on the user's own hardware (often a CPU: a director step of 1-2 minutes on 2 cores, issue 39) serves
# one generation at a time; a cloud endpoint serves many.
LOCAL_TIMEOUT_SECONDS, LOCAL_MAX_CONCURRENCY = 300, 1
CLOUD_TIMEOUT_SECONDS, CLOUD_MAX_CONCURRENCY = 60, 4

API_CONFIG_FIELDS = {
    "name",
    "base_url",
    "model",
    "timeout_seconds",
    "max_retries",
    "max_concurrency",
    "tool_call_mode",
    "max_output_tokens",
    "input_cost_per_mtok",
    "output_cost_per_mtok",
}


def create_api_config(
    *,
    owner: Any,
    name: str,
    base_url: str,
    api_key: str,
    model: str,
    timeout_seconds: int | None = None,
    max_retries: int = 4,
    max_concurrency: int | None = None,
    tool_call_mode: str = "auto",
    max_output_tokens: int = 0,
    input_cost_per_mtok: Decimal = Decimal(0),
    output_cost_per_mtok: Decimal = Decimal(0),
) -> ApiConfig:
    """`timeout_seconds` and `max_concurrency` left out suit the endpoint: on this machine or the local
    network (usually a CPU, one generation at a time) 300 s and 1, elsewhere 60 s and 4."""
    _check_host(base_url, owner)
    local = is_local_url(base_url)
    if timeout_seconds is None:
        timeout_seconds = LOCAL_TIMEOUT_SECONDS if local else CLOUD_TIMEOUT_SECONDS
    if max_concurrency is None:
        max_concurrency = LOCAL_MAX_CONCURRENCY if local else CLOUD_MAX_CONCURRENCY
    try:
        with transaction.atomic():
            return ApiConfig.objects.create(
                owner=owner,
                name=name.strip(),
                base_url=base_url.strip(),
                api_key=api_key.strip(),
                model=model.strip(),
                timeout_seconds=timeout_seconds,
                max_retries=max_retries,
                max_concurrency=max_concurrency,
                tool_call_mode=tool_call_mode,
                max_output_tokens=max_output_tokens,
                input_cost_per_mtok=input_cost_per_mtok,
                output_cost_per_mtok=output_cost_per_mtok,
            )
    except IntegrityError:
        raise ValidationError({"name": f"You already have an API config named “{name.strip()}”."}) from None


def update_api_config(*, config: ApiConfig, api_key: str | None = None, **changes: Any) -> ApiConfig:
    """`api_key=None` or blank keeps the stored key (keys are write-only: forms never show them)."""
    unknown = set(changes) - API_CONFIG_FIELDS
    if unknown:
        raise ValueError(f"cannot change {', '.join(sorted(unknown))}")
    if "base_url" in changes:
        _check_host(str(changes["base_url"]), config.owner)
    for name, value in changes.items():
        setattr(config, name, value.strip() if isinstance(value, str) else value)
    fields = list(changes)
    if api_key and api_key.strip():
        config.api_key = api_key.strip()
        fields.append("api_key")
    try:
        with transaction.atomic():
            config.save(update_fields=fields)
    except IntegrityError:
        raise ValidationError({"name": f"You already have an API config named “{config.name}”."}) from None
    return config


def _check_host(base_url: str, owner: Any) -> None:
    problem = host_problem(base_url.strip(), user=owner)
    if problem:
        raise ValidationError({"base_url": problem})


def delete_api_config(*, config: ApiConfig) -> None:
    config.delete()  # directors, agents and settings that used it keep existing without it (SET_NULL)
