from __future__ import annotations

from django.apps import AppConfig


class OrganizationConfig(AppConfig):
    name = "apps.organization"
    label = "organization"
    verbose_name = "Organization"
    nav_more_entries = [("Organize", "organization:page")]

    def ready(self) -> None:
        from apps.accounts.signals import messages_stored
        from apps.organization import receivers
        from apps.organization.search_kind import FILE_DOCUMENTS
        from apps.search.kinds import register_document_kind

        messages_stored.connect(receivers.save_stored_attachments, dispatch_uid="organization.save_attachments")
        register_document_kind(FILE_DOCUMENTS)  # library files in search: search imports nothing from here
        # The library watch is its own process (`manage.py watch_library`, started by `manage.py serve`): a
        # thread in the worker outlived the worker's main thread and failed on every file.
