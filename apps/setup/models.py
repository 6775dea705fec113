"""Per-user progress through the first-run wizard. Which steps are done is read from the data itself
(an account, an API config, a director, a filter exist); this row only remembers the user's choices."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class SetupState(models.Model):
    owner = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="setup_state")
    dismissed_at = models.DateTimeField(null=True, blank=True, help_text="The user skipped the wizard.")
    completed_at = models.DateTimeField(null=True, blank=True, help_text="The user finished the wizard.")

    class Meta:
        verbose_name = "setup state"

    def __str__(self) -> str:
        return f"setup of user {self.owner_id}"
