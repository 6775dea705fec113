"""ApiConfig: an owner's OpenAI-compatible endpoint. It moved here from orchestration and keeps that app's
table (`orchestration_apiconfig`), so rows, foreign keys and content type stayed where they were."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from mailagent.crypto import EncryptedTextField

TOOL_CALL_MODE_CHOICES = [
    ("auto", "Automatic: the endpoint's tool calls, plus calls written in the text (checked)"),
    ("native", "The endpoint's tool calls only"),
    ("json_schema", "Constrained output: replies forced to the tools' JSON schema"),
    ("text", "Tools described in the prompt, calls parsed from the text (checked)"),
]


class ApiConfig(models.Model):
    """An OpenAI-compatible endpoint: OpenAI, Azure OpenAI (v1), Ollama, vLLM, LM Studio …"""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_configs")
    name = models.CharField(max_length=100)
    base_url = models.URLField(
        max_length=500, blank=True, help_text="e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1"
    )
    api_key = EncryptedTextField(
        blank=True,
        help_text="Stored encrypted (AES-256-GCM) when VX_MAILAGENT_KEY is set.",
        associated_data="orchestration.apiconfig.api_key",  # keys stored before the move still decrypt
    )
    model = models.CharField(max_length=200)
    max_concurrency = models.PositiveIntegerField(
        default=4, help_text="Requests generating at once, across all processes; the others wait in line."
    )
    timeout_seconds = models.PositiveIntegerField(default=60)
    max_retries = models.PositiveIntegerField(default=4)
    tool_call_mode = models.CharField(
        max_length=12,
        choices=TOOL_CALL_MODE_CHOICES,
        default="auto",
        help_text="How tools reach the model. Constrained output suits small local models (llama.cpp, Ollama, "
        "LM Studio, vLLM).",
    )
    max_output_tokens = models.PositiveIntegerField(
        default=0, help_text="Longest reply in tokens (0 = the endpoint's default); bounds a step on a CPU."
    )
    # Rough cost estimate on the Runs page (USD per million tokens); 0 = unknown.
    input_cost_per_mtok = models.DecimalField(max_digits=10, decimal_places=4, default=0)
    output_cost_per_mtok = models.DecimalField(max_digits=10, decimal_places=4, default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "orchestration_apiconfig"
        verbose_name = "API config"
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="api_config_unique_name_per_owner")]
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.model})"


class GenerationTicket(models.Model):
    """A request to a model configuration, waiting for a generation slot or holding one (apps/llm/queue.py).

    One row per request in flight, in every process (web, workers): the ids give the order, `active` rows
    hold the configuration's `max_concurrency` slots, and a row whose holder died (same machine) or stopped
    renewing its lease (`heartbeat_at`) is deleted by the next waiter, so a killed process never holds a slot."""

    key = models.CharField(max_length=200)  # LLMConfig.key: the limit is shared per key
    requester = models.CharField(max_length=100, blank=True)  # "run:12", "ask:7": where a page shows the position
    holder = models.CharField(max_length=200)  # mailagent.liveness.process_identity()
    active = models.BooleanField(default=False)
    enqueued_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["key", "id"], name="llm_ticket_key_order"),
            models.Index(fields=["requester"], name="llm_ticket_requester"),
        ]

    def __str__(self) -> str:
        return f"{self.key} #{self.pk} ({'generating' if self.active else 'waiting'})"
