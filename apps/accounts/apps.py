from __future__ import annotations

from django.apps import AppConfig

OUTBOX_SCHEDULE_NAME = "mail: outbox sweeper"
OUTBOX_SWEEP_MINUTES = 1
WRITEBACK_SCHEDULE_NAME = "mail: write-back retries"
IMPORT_SWEEP_SCHEDULE_NAME = "mail: import upload sweeper"
IMPORT_SWEEP_MINUTES = 10
WRITEBACK_RETRY_MINUTES = 1


class AccountsConfig(AppConfig):
    name = "apps.accounts"
    label = "mail"
    verbose_name = "Mail accounts"
    nav_entries = [("Mailbox", "mail:mailbox")]
    settings_entries = [("Mail accounts", "mail:accounts")]

    def ready(self) -> None:
        from apps.accounts import demo
        from mailagent.signals import demo_data_requested

        demo_data_requested.connect(demo.load_demo_on_empty_database, dispatch_uid="accounts.demo")

        from django.db.models.signals import post_migrate

        from mailagent.schedules import ensure_maintenance_schedules, register_maintenance

        register_maintenance(
            name=OUTBOX_SCHEDULE_NAME, func="apps.accounts.tasks.sweep_outbox_task", minutes=OUTBOX_SWEEP_MINUTES
        )
        register_maintenance(
            name=WRITEBACK_SCHEDULE_NAME,
            func="apps.accounts.tasks.retry_mail_actions_task",
            minutes=WRITEBACK_RETRY_MINUTES,
        )
        register_maintenance(
            name=IMPORT_SWEEP_SCHEDULE_NAME,
            func="apps.accounts.tasks.sweep_import_uploads_task",
            minutes=IMPORT_SWEEP_MINUTES,
        )
        post_migrate.connect(ensure_maintenance_schedules, sender=self, dispatch_uid="mailagent.maintenance_schedules")
