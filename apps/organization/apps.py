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

        messages_stored.connect(receivers.save_stored_attachments, dispatch_uid="organization.save_attachments")
        # The library watch lives in the background worker (`make run` starts `manage.py qcluster`): one
        # observer per worker host, next to the scheduled scan that catches whatever a watch missed.
        if len(sys.argv) > 1 and sys.argv[1] == "qcluster":
            from apps.organization.watcher import start_library_watch_in_background

            start_library_watch_in_background()
