from __future__ import annotations

from django.contrib import admin

from apps.llm.models import ApiConfig
from mailagent.admin_scoping import OwnerScopedAdmin
from mailagent.admin_secrets import WriteOnlySecretsMixin


@admin.register(ApiConfig)
class ApiConfigAdmin(WriteOnlySecretsMixin, OwnerScopedAdmin):
    secret_fields = ("api_key",)
    list_display = ("name", "model", "base_url", "owner", "max_concurrency", "timeout_seconds")
    search_fields = ("name", "model", "base_url")
    list_select_related = ("owner",)
