"""The IMAP provider: `connection` (login, sessions, errors) under `sync` (folder mirroring) and `writeback`
(flags, keywords, moves, the Sent copy), joined in `provider.ImapProvider`; `folders` is what they share."""
