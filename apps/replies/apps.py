from __future__ import annotations

from django.apps import AppConfig


class RepliesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "apps.replies"
    label = "replies"
    verbose_name = "Replies"
    nav_more_entries = [("Drafts", "replies:drafts")]

    def ready(self) -> None:
        from apps.orchestration.approvals import register_approval_performer
        from apps.replies.actions import REPLY_SEND, perform_send_approval

        register_approval_performer(REPLY_SEND, perform_send_approval)
