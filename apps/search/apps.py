from __future__ import annotations

from django.apps import AppConfig


class SearchConfig(AppConfig):
    name = "apps.search"
    label = "search"
    verbose_name = "Search"
    nav_entries = [("Search", "search:results")]

    def ready(self) -> None:
        from django.core import checks
        from django.db.models.signals import post_delete

        from apps.accounts.models import Attachment
        from apps.accounts.signals import messages_stored
        from apps.search import checks as search_checks
        from apps.search import receivers
        from apps.search.tasks import BACKFILL_SCHEDULE_MINUTES, BACKFILL_SCHEDULE_NAME
        from mailagent.schedules import register_maintenance

        messages_stored.connect(receivers.index_stored_messages, dispatch_uid="search.index_stored_messages")
        post_delete.connect(receivers.unindex_attachment, sender=Attachment, dispatch_uid="search.unindex_attachment")
        checks.register(search_checks.check_search_libraries, "search")
        checks.register(search_checks.check_search_database, checks.Tags.database)
        register_maintenance(
            name=BACKFILL_SCHEDULE_NAME,
            func="apps.search.tasks.backfill_if_pending_task",
            minutes=BACKFILL_SCHEDULE_MINUTES,
        )
