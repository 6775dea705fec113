from __future__ import annotations

from django.apps import AppConfig


class OrchestrationConfig(AppConfig):
    name = "apps.orchestration"
    label = "orchestration"
    verbose_name = "Orchestration"
    nav_entries = [("Runs", "runs:list")]
    nav_more_entries = [("Approvals", "runs:approvals")]
    settings_entries = [("Prompts", "prompts:list"), ("Memory", "runs:memories")]

    def ready(self) -> None:
        from apps.orchestration.inbox_replies import enqueue_reply
        from apps.workspaces import hooks

        hooks.on_reply(enqueue_reply)  # Inbox replies continue their run

        from mailagent.schedules import register_maintenance

        register_maintenance(
            name="orchestration: inbox replies sweeper",
            func="apps.orchestration.inbox_replies.deliver_pending_replies_task",
            minutes=10,
        )
