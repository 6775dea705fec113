"""Directors and the runs routing creates for them.

Director is deliberately small until the orchestration engine lands (prompt, ApiConfig, agents); a Run
is one (message, director) pair, unique, so routing may fire twice or race without duplicating work.
Run refers to its fetch cycle and matching filter by id only: orchestration never imports routing.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class Director(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="directors")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    enabled = models.BooleanField(default=True, help_text="Disabled directors receive no new runs.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="director_unique_name_per_owner")]
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    SKIPPED = "skipped", "Skipped"


class Run(models.Model):
    message = models.ForeignKey("mail.Message", on_delete=models.CASCADE, related_name="runs")
    director = models.ForeignKey(Director, on_delete=models.CASCADE, related_name="runs")
    fetch_cycle_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    # The first filter (in order) that routed the message to this director, and what it matched.
    filter_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    match = models.JSONField(default=dict, blank=True)
    trigger = models.CharField(max_length=16, default="route", help_text="route (new mail) or replay")
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True)
    status_reason = models.TextField(blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["message", "director"], name="run_unique_message_director")]
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"run {self.pk}: {self.director_id} ← message {self.message_id} ({self.status})"

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None
