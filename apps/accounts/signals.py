"""What accounts announces to higher layers (search indexes, routing routes); connect in AppConfig.ready()."""

from __future__ import annotations

from django.dispatch import Signal

# Sent once per committed batch, after commit. kwargs: account_id (int), message_ids (list[int]),
# fetch_cycle_id (int | None: the fetcher cycle that asked for the sync, opaque to accounts).
messages_stored = Signal()
