from __future__ import annotations

from django.apps import AppConfig


class RoutingConfig(AppConfig):
    name = "apps.routing"
    label = "routing"
    verbose_name = "Routing and fetcher"
    settings_entries = [("Fetcher", "routing:fetcher")]

    def ready(self) -> None:
        from apps.accounts.models import Message
        from apps.accounts.signals import messages_stored
        from apps.routing import receivers

        messages_stored.connect(receivers.route_stored_messages, sender=Message, dispatch_uid="routing.route")

        from apps.accounts.signals import account_removal_inventory, account_removing
        from apps.routing import account_removal

        account_removal_inventory.connect(account_removal.inventory, dispatch_uid="routing.removal_inventory")
        account_removing.connect(account_removal.remove_chunk, dispatch_uid="routing.removal")

        from mailagent.schedules import register_maintenance

        register_maintenance(
            name="routing: stalled runs and cycles", func="apps.routing.tasks.sweep_stalled_task", minutes=5
        )
