from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "apps.accounts"
    label = "mail"
    verbose_name = "Mail accounts"
    nav_entries = [("Mailbox", "mail:mailbox"), ("Accounts", "mail:accounts")]

    def ready(self) -> None:
        from apps.accounts import demo
        from mailagent.signals import demo_data_requested

        demo_data_requested.connect(demo.load_demo_on_empty_database, dispatch_uid="accounts.demo")
