"""What removing a mail account takes from the layers above accounts: director runs (with their threads,
provider events and logs), the runs' workspaces (items, tokens, Inbox entries) and search index entries.

Connected in RoutingConfig.ready(): routing sits above search, workspaces and orchestration, so it is the
one place that may reach all three; accounts only announces (apps/accounts/signals.py). Index entries go
through search's own delete API so both index structures (full text and vectors) follow.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from apps.accounts.models import Attachment, MailAccount
from apps.accounts.removal import RemovalItem
from apps.orchestration.models import Run
from apps.search.actions import unindex_documents
from apps.search.models import DocumentKind, SearchDocument
from apps.workspaces.models import InboxEntry, Workspace


def _account_documents(account: MailAccount) -> Any:
    return SearchDocument.objects.filter(Q(account=account) | Q(message__account=account))


def inventory(sender: Any, *, account: MailAccount, **kwargs: Any) -> list[RemovalItem]:
    runs = Run.objects.filter(message__account=account)
    run_ids = runs.values("pk")
    workspaces = Workspace.objects.filter(run_id__in=run_ids)
    entries = InboxEntry.objects.filter(workspace__in=workspaces)
    return [
        RemovalItem("runs", "Director runs", runs.count(), note="with their transcripts, provider events and logs"),
        RemovalItem(
            "workspaces",
            "Run workspaces",
            workspaces.count(),
            note=f"with their items and {entries.count()} Inbox entries",
        ),
        RemovalItem("index_entries", "Search index entries", _account_documents(account).count()),
    ]


def remove_chunk(sender: Any, *, account: MailAccount, message_ids: list[int], **kwargs: Any) -> None:
    """Inside the transaction that deletes these messages."""
    if not message_ids:  # the last call, before the account row goes: anything indexed by account only
        for kind in DocumentKind.values:
            leftover = list(_account_documents(account).filter(kind=kind).values_list("object_id", flat=True))
            unindex_documents(kind=kind, object_ids=leftover)
        return
    run_ids = list(Run.objects.filter(message_id__in=message_ids).values_list("pk", flat=True))
    if run_ids:
        Workspace.objects.filter(run_id__in=run_ids).delete()
        Run.objects.filter(pk__in=run_ids).delete()
    attachment_ids = list(Attachment.objects.filter(message_id__in=message_ids).values_list("pk", flat=True))
    unindex_documents(kind=DocumentKind.ATTACHMENT, object_ids=attachment_ids)
    unindex_documents(kind=DocumentKind.MESSAGE, object_ids=message_ids)
