from __future__ import annotations

import sys

from django.apps import AppConfig


class OrganizationConfig(AppConfig):
    name = "apps.organization"
    label = "organization"
    verbose_name = "Organization"
    nav_entries = [("Organize", "organization:page")]

    def ready(self) -> None:
        from apps.accounts.signals import messages_stored
        from apps.organization import receivers
        from apps.organization.search_kind import FILE_DOCUMENTS
        from apps.search.kinds import register_document_kind

        messages_stored.connect(receivers.save_stored_attachments, dispatch_uid="organization.save_attachments")
        register_document_kind(FILE_DOCUMENTS)  # library files in search: search imports nothing from here
        # The library watch lives in the background worker (`make run` starts `manage.py qcluster`): one
        # observer per worker host, next to the scheduled scan that catches whatever a watch missed.
        if len(sys.argv) > 1 and sys.argv[1] == "qcluster":
            from apps.organization.watcher import start_library_watch_in_background

            start_library_watch_in_background()
