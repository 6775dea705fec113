"""Forms of the wizard and the settings pages. They validate input; saving goes through actions."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms

from apps.llm.actions import CLOUD_MAX_CONCURRENCY, CLOUD_TIMEOUT_SECONDS, LOCAL_MAX_CONCURRENCY, LOCAL_TIMEOUT_SECONDS
from apps.llm.discovery import candidates, is_loopback_url
from apps.llm.models import TOOL_CALL_MODE_CHOICES, ApiConfig
from apps.orchestration.models import Prompt
from apps.setup import selectors
from apps.setup.director_templates import TEMPLATES
from mailagent.crypto import get_keyring, secret_storage

PROVIDERS = [
    ("openai", "OpenAI"),
    ("azure", "Azure OpenAI"),
    ("ollama", "Ollama"),
    ("custom", "Other OpenAI-compatible server (vLLM, LM Studio, …)"),
]
PROVIDER_URLS = {
    "openai": "https://api.openai.com/v1",
    "azure": "",
    "ollama": "http://127.0.0.1:11434/v1",
    "custom": "",
}
# Defaults for a model server on this machine, usually a CPU (issue 39's study on 2 cores: a director step of
# 1 to 2 minutes, generation collapsing when requests compete for the cores): a long timeout, one request at a
# time, few retries (each repeats a long wait), constrained tool calls (10/10 valid with small models), and a
# bounded reply so a step cannot run for ever.
LOCAL_DEFAULTS: dict[str, Any] = {
    "timeout_seconds": LOCAL_TIMEOUT_SECONDS,
    "max_concurrency": LOCAL_MAX_CONCURRENCY,  # across every process: the others wait in line (apps/llm/queue.py)
    "max_retries": 1,
    "tool_call_mode": "json_schema",
    "max_output_tokens": 512,
}


class ApiConfigForm(forms.Form):
    provider = forms.ChoiceField(
        choices=PROVIDERS, required=False, initial="openai", help_text="Fills in the usual base URL."
    )
    name = forms.CharField(max_length=100, initial="OpenAI")
    base_url = forms.URLField(
        max_length=500,
        required=False,
        label="Base URL",
        assume_scheme="https",
        help_text="e.g. https://api.openai.com/v1, http://127.0.0.1:11434/v1 (Ollama), "
        "https://<resource>.openai.azure.com/openai/v1/ (Azure). Empty: OpenAI.",
    )
    api_key = forms.CharField(
        required=False,
        label="API key",
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Never shown again. Ollama and most local servers need none.",
    )
    model = forms.CharField(max_length=200, help_text="e.g. gpt-4o-mini, llama3.2, or your Azure deployment name")
    timeout_seconds = forms.IntegerField(
        min_value=1, max_value=3600, initial=CLOUD_TIMEOUT_SECONDS, label="Timeout (seconds)"
    )
    max_retries = forms.IntegerField(
        min_value=0, max_value=10, initial=4, help_text="For timeouts, 429 and 5xx; a refused connection fails at once."
    )
    max_concurrency = forms.IntegerField(
        min_value=1,
        max_value=64,
        initial=CLOUD_MAX_CONCURRENCY,
        label="Parallel requests",
        help_text="Requests generating at once, across the whole app; the others wait in line, shown where you wait.",
    )
    tool_call_mode = forms.ChoiceField(
        choices=TOOL_CALL_MODE_CHOICES,
        required=False,
        initial="auto",
        label="Tool calls",
        help_text="Constrained output suits small local models (llama.cpp, Ollama, LM Studio, vLLM).",
    )
    max_output_tokens = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=200_000,
        initial=0,
        label="Max output tokens",
        help_text="Longest reply in tokens (0 = the endpoint's default); bounds a step on a CPU.",
    )
    input_cost_per_mtok = forms.DecimalField(
        min_value=Decimal(0), max_digits=10, decimal_places=4, initial=0, label="Input cost (USD per million tokens)"
    )
    output_cost_per_mtok = forms.DecimalField(
        min_value=Decimal(0), max_digits=10, decimal_places=4, initial=0, label="Output cost (USD per million tokens)"
    )

    def __init__(self, *args: Any, editing: ApiConfig | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.editing = editing
        for name, value in LOCAL_DEFAULTS.items():  # setup.js applies them for a local URL (is_local_url)
            field = self.fields[name]
            field.widget.attrs.update({"data-local-default": str(value), "data-generic-default": str(field.initial)})
        encrypted = get_keyring().enabled
        storage = "encrypted (AES-256-GCM)" if encrypted else "in plaintext (VX_MAILAGENT_KEY is not set)"
        self.fields["api_key"].help_text = f"Stored {storage}; never shown again. Local servers usually need none."
        if editing is not None:
            # How this key really sits in the database (read from the column), not how a new one would.
            stored = secret_storage(editing, "api_key")
            if stored.state == "none":
                self.fields["api_key"].help_text = "No key is stored. Type one to add it."
            elif stored.state == "undecryptable":
                self.fields[
                    "api_key"
                ].help_text = (
                    f"The stored key {stored.label}: this server cannot use it. Type the key again to replace it."
                )
            else:
                self.fields[
                    "api_key"
                ].help_text = f"A key is {stored.label} and never shown. Leave blank to keep it, or type a new one."

    @classmethod
    def initial_for(cls, config: ApiConfig) -> dict[str, Any]:
        return {name: getattr(config, name) for name in cls.base_fields if name not in ("api_key", "provider")}

    @classmethod
    def initial_for_local(cls, query: Any) -> dict[str, Any]:
        """The form filled for a model picked from a local server (one click in the list of found servers:
        `?local_url=…&local_model=…&local_kind=…`): its URL and model, a name, and the CPU-friendly defaults.
        Empty unless the URL is on this machine (a link cannot prefill the form with some other host)."""
        base_url = str(query.get("local_url") or "")
        model = str(query.get("local_model") or "")
        kind = str(query.get("local_kind") or "")
        if not is_loopback_url(base_url) or not model.strip():
            return {}
        label = next((entry[1] for entry in candidates() if entry[0] == kind), "Local model")
        return {
            "provider": "ollama" if kind == "ollama" else "custom",
            "name": f"{label}: {model.strip()}"[:100],
            "base_url": base_url.strip(),
            "model": model.strip(),
            **LOCAL_DEFAULTS,
        }

    def clean_tool_call_mode(self) -> str:
        return str(self.cleaned_data.get("tool_call_mode") or "auto")

    def clean_max_output_tokens(self) -> int:
        return int(self.cleaned_data.get("max_output_tokens") or 0)

    def changes(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {name: data[name] for name in self.fields if name not in ("api_key", "provider")}


class TemplateDirectorForm(forms.Form):
    template = forms.ChoiceField(
        choices=[(t.key, t.name) for t in TEMPLATES], widget=forms.RadioSelect, initial=TEMPLATES[0].key
    )
    name = forms.CharField(max_length=100, label="Director name", initial=TEMPLATES[0].name)
    api_config = forms.ModelChoiceField(queryset=ApiConfig.objects.none(), label="Model", empty_label=None)

    def __init__(self, *args: Any, owner: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["api_config"].queryset = ApiConfig.objects.filter(owner=owner)  # type: ignore[attr-defined]


class DirectorSettingsForm(forms.Form):
    name = forms.CharField(max_length=100)
    description = forms.CharField(max_length=2000, required=False, widget=forms.Textarea(attrs={"rows": 2}))
    enabled = forms.BooleanField(required=False, help_text="Disabled directors receive no new runs.")
    api_config = forms.ModelChoiceField(
        queryset=ApiConfig.objects.none(),
        required=False,
        label="Model",
        empty_label="— none: runs are skipped —",
    )
    prompt = forms.ModelChoiceField(queryset=Prompt.objects.none(), required=False, empty_label="— built-in only —")
    imprint = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Extra standing instructions appended to the system prompt.",
    )
    accounts = forms.ModelMultipleChoiceField(
        queryset=selectors.MailAccount.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Accounts whose calendar and to-dos the tools may use. None ticked: all of your accounts.",
    )
    memory_access = forms.BooleanField(
        required=False, help_text="The director and its agents may read and write shared and global memories."
    )
    step_limit = forms.IntegerField(min_value=1, max_value=100, help_text="Model calls per run before it stops.")

    def __init__(self, *args: Any, owner: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["api_config"].queryset = ApiConfig.objects.filter(owner=owner)  # type: ignore[attr-defined]
        self.fields["prompt"].queryset = selectors.prompts_for_user(user=owner)  # type: ignore[attr-defined]
        self.fields["accounts"].queryset = selectors.accounts_for_user(user=owner)  # type: ignore[attr-defined]


class AgentForm(forms.Form):
    name = forms.CharField(max_length=100)
    slug = forms.SlugField(max_length=57, help_text="The director calls it as the tool agent__<slug>.")
    summary = forms.CharField(max_length=300, required=False, help_text="What the director is told this agent does.")
    prompt = forms.ModelChoiceField(queryset=Prompt.objects.none(), required=False, empty_label="— built-in only —")
    imprint = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    allowed_tools = forms.MultipleChoiceField(
        choices=[], required=False, widget=forms.CheckboxSelectMultiple, label="Tools"
    )
    api_config = forms.ModelChoiceField(
        queryset=ApiConfig.objects.none(), required=False, label="Model", empty_label="— the director's —"
    )
    step_limit = forms.IntegerField(min_value=1, max_value=100, initial=8)
    enabled = forms.BooleanField(required=False, initial=True)

    def __init__(self, *args: Any, owner: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["allowed_tools"].choices = selectors.tool_choices()  # type: ignore[attr-defined]
        self.fields["api_config"].queryset = ApiConfig.objects.filter(owner=owner)  # type: ignore[attr-defined]
        self.fields["prompt"].queryset = selectors.prompts_for_user(user=owner)  # type: ignore[attr-defined]


class FilesystemRootForm(forms.Form):
    path = forms.CharField(
        max_length=1000,
        required=False,
        label="Virtual root",
        help_text="Absolute directory the filesystem tools may read for your runs. Empty: the default below.",
    )

    def clean_path(self) -> str:
        from pathlib import Path

        value = str(self.cleaned_data.get("path") or "").strip()
        if value and not Path(value).is_absolute():
            raise forms.ValidationError("Give an absolute path, e.g. /srv/mailagent/files.")
        return value


class SessionTimeoutForm(forms.Form):
    session_timeout_minutes = forms.IntegerField(
        min_value=1,
        max_value=24 * 60,
        label="Agent session timeout (minutes)",
        help_text="An agent conversation idle this long expires; the director then starts a new one.",
    )
