"""Gmail through the official API client: full listing once, then the history feed; labels written back.

A Gmail message is in one place here: the folder its labels give (TRASH, SPAM, INBOX, SENT, DRAFT, else its
first user label, else "" = All Mail, which plays the Archive folder's role), under its Gmail id, which names it
wherever it is (global_id): a label change that changes that folder moves its location, nothing is downloaded.

- First sync (or after the history id expired): messages.list over all mail (no spam) plus the Trash; new
  ids fetched as `format=raw` in batch requests and stored batch by batch; known ids get their labels re-read
  (flags, moves); stored locations no longer listed are removed (deleted, or gone to spam, meanwhile). The
  profile's historyId, taken *before* listing, becomes the account cursor once everything listed is stored.
- Incremental: history.list(messageAdded, messageDeleted, labelAdded, labelRemoved) since the cursor; per
  message the last record wins: deleted (or now spam) → its location goes; labels → moved / flags updated,
  or fetched raw when no stored message has that id. The feed's historyId is the next cursor. A 404 from
  history.list means the id is too old: full resync.
- Write-back (gmail.modify scope): messages.modify for UNREAD / STARRED / INBOX / a label, messages.trash
  and messages.untrash.
- Tags: every user label of a message (by display name) is one of its tags, kept on the location in the
  keyword form of apps/accounts/labels.py, so adding or removing a label in Gmail adds or takes off the tag at
  the next sync (the folder still comes from the first user label). A tag added here is messages.modify
  addLabelIds with the user label of that name (compared as tags are, case-insensitively), created with
  labels.create when there is none; taking it off is removeLabelIds. A label name that cannot be a tag (a
  space or a quote in it) is not mirrored as one.
- 429 / 403 rateLimitExceeded: wait as told by Retry-After (capped, limited attempts), then give up
  with ProviderError(category="rate_limited").
- Attachments are fetched on demand by re-reading the raw message and picking the MIME part.

The package: `client` (the API, its errors, the connection) under `sync` and `writeback`, joined in
`provider.GmailProvider`; `folders` says where a message is by its labels.
"""
