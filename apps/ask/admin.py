from __future__ import annotations

from django.contrib import admin

from apps.ask.models import AskConversation, AskRun, Draft
from mailagent.admin_scoping import OwnerScopedAdmin


@admin.register(AskRun)
class AskRunAdmin(OwnerScopedAdmin):
    list_display = ("question", "owner", "status", "intent", "answer_mode", "created_at")
    list_filter = ("status", "intent", "answer_mode")
    search_fields = ("question", "answer")
    readonly_fields = ("id", "conversation", "owner", "created_at", "started_at", "finished_at")


@admin.register(AskConversation)
class AskConversationAdmin(OwnerScopedAdmin):
    list_display = ("id", "owner", "created_at")


@admin.register(Draft)
class DraftAdmin(OwnerScopedAdmin):
    """Drafts are for review: edit them here; Ask never sends them."""

    list_display = ("subject", "account", "owner", "created_at")
    search_fields = ("subject", "body")
    raw_id_fields = ("thread", "in_reply_to", "ask_run")
