from __future__ import annotations

from django.apps import AppConfig


class RepliesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "apps.replies"
    label = "replies"
    verbose_name = "Replies"
    nav_entries = [("Drafts", "replies:drafts")]
