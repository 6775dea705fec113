"""What accounts announces to higher layers (search indexes, routing routes); connect in AppConfig.ready()."""

from __future__ import annotations

from django.dispatch import Signal

# Sent after commit, once per committed batch and again by the outbox sweeper (apps/accounts/outbox.py).
# kwargs:
#   account_id (int);
#   message_ids (list[int]): messages this batch created;
#   fetch_cycle_id (int | None): the fetcher cycle that asked for the sync, opaque to accounts;
#   retry_ids (list[int], optional): messages stored earlier whose hook work may still be missing (a
#     re-import of them, or the sweeper); a receiver does its work for those whose outbox field is NULL;
#   retry_kinds (list[str] | None, optional): the hook kinds (HookKind) retry_ids are meant for; None = all.
# A receiver must not raise: it marks its work done with outbox.mark_done in the transaction of its result,
# and records a failure (outbox.run_hook) when it cannot, so the sweeper tries again.
messages_stored = Signal()

# Removing an account (apps/accounts/removal.py). Higher layers own rows that hang off the account's mail
# (runs and their workspaces, search index entries) and say what they hold and delete it themselves.
# account_removal_inventory: kwargs account (MailAccount); each receiver returns a list of
#   removal.RemovalItem (what it would delete, with real counts) — shown on the confirmation page.
# account_removing: kwargs account (MailAccount), message_ids (list[int]): one chunk of the account's
#   messages, sent inside the transaction that deletes them; receivers delete what hangs off them.
account_removal_inventory = Signal()
account_removing = Signal()
