"""Per-user notification preferences (the browser Notification API prompt and switch)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class NotificationPreference(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preference"
    )
    browser_notifications = models.BooleanField(
        default=True,
        help_text="Show a browser notification when a run completes or fails, or an agent writes to the Inbox.",
    )
    prompt_dismissed = models.BooleanField(
        default=False, help_text="The user answered the one-time 'turn on browser notifications' prompt."
    )

    def __str__(self) -> str:
        return f"notification preference of user {self.user_id}"
