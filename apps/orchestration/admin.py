"""The runtime editor (API configs: apps/llm/admin.py): prompts (ordered ChatML messages, templates), directors
with their agents (and, from routing, their filters) as drag-ordered inlines, settings, memories and run records.
Changes apply to the next run without a restart: the engine reads these rows at every run."""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib import admin, messages
from django.contrib.admin.options import InlineModelAdmin
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.orchestration.models import (
    Agent,
    Conversation,
    Director,
    FilesystemRoot,
    Memory,
    OrchestrationSettings,
    OrchLog,
    Prompt,
    PromptMessage,
    ProviderEvent,
    Run,
)
from mailagent.admin_scoping import OwnerScopedAdmin, OwnerScopedStackedInline, OwnerScopedTabularInline
from mailagent.admin_secrets import encrypted_json_display, undecryptable_fields


class SortableMedia:
    js = ("mailagent/admin_sortable.js",)
    css: ClassVar[dict[str, tuple[str, ...]]] = {"all": ("mailagent/admin_sortable.css",)}


class PromptMessageInline(OwnerScopedTabularInline):
    model = PromptMessage
    extra = 1
    fields = ("order", "role", "content")
    classes = ("sortable-inline",)
    Media = SortableMedia


@admin.action(description="Save a copy as template")
def save_as_template(modeladmin: Any, request: HttpRequest, queryset: QuerySet[Prompt]) -> None:
    for prompt in queryset:
        copy_prompt(prompt, name=f"{prompt.name} (template)", is_template=True)
    messages.success(request, f"{queryset.count()} template(s) saved.")


@admin.action(description="Start a new prompt from template")
def load_template(modeladmin: Any, request: HttpRequest, queryset: QuerySet[Prompt]) -> None:
    for prompt in queryset:
        copy_prompt(prompt, name=f"{prompt.name.removesuffix(' (template)')} (from template)", is_template=False)
    messages.success(request, f"{queryset.count()} prompt(s) created from templates.")


def copy_prompt(prompt: Prompt, *, name: str, is_template: bool) -> Prompt:
    copy = Prompt.objects.create(owner=prompt.owner, name=name[:150], is_template=is_template)
    PromptMessage.objects.bulk_create(
        [PromptMessage(prompt=copy, order=m.order, role=m.role, content=m.content) for m in prompt.messages.all()]
    )
    return copy


@admin.register(Prompt)
class PromptAdmin(OwnerScopedAdmin):
    list_display = ("name", "is_template", "owner", "created_at")
    list_filter = ("is_template",)
    search_fields = ("name", "messages__content")
    inlines = (PromptMessageInline,)
    actions = (save_as_template, load_template)


class AgentInline(OwnerScopedStackedInline):
    model = Agent
    extra = 0
    fields = (
        "order",
        "name",
        "slug",
        "summary",
        "prompt",
        "imprint",
        "allowed_tools",
        "api_config",
        "step_limit",
        "enabled",
    )
    prepopulated_fields = {"slug": ("name",)}
    classes = ("sortable-inline",)
    Media = SortableMedia


@admin.register(Director)
class DirectorAdmin(OwnerScopedAdmin):
    list_display = ("name", "owner", "enabled", "api_config", "step_limit", "created_at")
    list_filter = ("enabled",)
    search_fields = ("name", "description")
    list_select_related = ("owner", "api_config")
    filter_horizontal = ("accounts",)
    # Higher layers (routing's filters) add their inlines to this tuple from their own admin module.
    inlines: ClassVar[tuple[type[InlineModelAdmin[Any, Any]], ...]] = (AgentInline,)


@admin.register(OrchestrationSettings)
class OrchestrationSettingsAdmin(OwnerScopedAdmin):
    list_display = ("__str__", "session_timeout_minutes", "max_file_bytes")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return not OrchestrationSettings.objects.exists()


@admin.register(FilesystemRoot)
class FilesystemRootAdmin(OwnerScopedAdmin):
    """Which directory each owner's runs may read. Only superusers may point it somewhere: a staff member
    choosing their own path could read any file the server can."""

    list_display = ("owner", "path")
    list_select_related = ("owner",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return () if request.user.is_superuser else ("owner", "path")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_superuser)


@admin.register(Memory)
class MemoryAdmin(OwnerScopedAdmin):
    list_display = ("content", "scope", "director", "agent", "owner", "updated_at")
    list_filter = ("scope", "director")
    # No search box: the content is encrypted at rest (the Memories page searches it).

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return (*super().get_readonly_fields(request, obj), *undecryptable_fields(obj, ("content",)))


class ConversationInline(OwnerScopedTabularInline):
    model = Conversation
    extra = 0
    fields = ("kind", "agent_name", "status", "finalized", "session_id", "last_active_at", "ended_at")
    readonly_fields = fields
    can_delete = False
    show_change_link = True


@admin.register(Run)
class RunAdmin(OwnerScopedAdmin):
    list_display = ("pk", "director", "message", "status", "trigger", "fetch_cycle_id", "created_at")
    list_filter = ("status", "trigger", "director")
    list_select_related = ("director", "message")
    raw_id_fields = ("message",)
    readonly_fields = ("created_at", "started_at", "finished_at", "prompt_tokens", "completion_tokens")
    inlines = (ConversationInline,)


@admin.register(Conversation)
class ConversationAdmin(OwnerScopedAdmin):
    list_display = ("pk", "run", "kind", "agent_name", "status", "finalized", "last_active_at")
    list_filter = ("kind", "status")
    raw_id_fields = ("run", "parent")
    # The transcript is encrypted at rest: shown read-only (an edit would re-encrypt whatever the form held).
    exclude = ("messages",)
    readonly_fields = ("messages_display",)
    messages_display = encrypted_json_display("messages", "Transcript")


@admin.register(ProviderEvent)
class ProviderEventAdmin(OwnerScopedAdmin):
    # Shown read-only (an edit would re-encrypt whatever the form held); "cannot decrypt" when the key is gone.
    exclude = ("payload",)
    readonly_fields = ("payload_display",)
    payload_display = encrypted_json_display("payload", "Payload")
    list_display = ("created_at", "run", "kind", "model", "attempt", "status", "latency_ms", "category")
    list_filter = ("kind", "category")
    raw_id_fields = ("run", "thread")


@admin.register(OrchLog)
class OrchLogAdmin(OwnerScopedAdmin):
    exclude = ("detail", "result")
    readonly_fields = ("detail_display", "result_display")
    detail_display = encrypted_json_display("detail", "Detail")
    result_display = encrypted_json_display("result", "Result")
    list_display = ("timestamp", "run", "phase", "director_name", "agent_name", "error")
    list_filter = ("phase",)
    raw_id_fields = ("run", "dir_thread", "agent_thread")
