"""Mail pages: `accounts` (accounts, account detail, imports) and `mail` (mailbox, threads, attachments)."""
