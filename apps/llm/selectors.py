"""Reads for ApiConfig, owner-scoped (404 for another user's row)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from apps.llm.models import ApiConfig


def api_configs_for_user(*, user: Any) -> QuerySet[ApiConfig]:
    return ApiConfig.objects.filter(owner=user).order_by("name")


def access_api_config(*, user: Any, config_id: int) -> ApiConfig:
    config = ApiConfig.objects.filter(pk=config_id, owner=user).first()
    if config is None:
        raise Http404("No such model configuration")
    return config


def find_api_config(*, user: Any, config_id: int) -> ApiConfig | None:
    """The owner's config with this id, or None (for settings that fall back to "no model")."""
    return ApiConfig.objects.filter(pk=config_id, owner=user).first()
