"""A demo mailbox generated in code: ~200 realistic messages for a first look at the app.

The mailbox belongs to Deniz Kaya, a freelance product consultant in Berlin. Everything is fictional
(all domains are under `.example`) and deterministic: the same seed and anchor produce byte-identical
messages, and stable Message-IDs make a second import store nothing.

The messages are written as .eml files into a temporary zip (one directory per folder, in delivery
order) and imported through the ordinary importer, so the demo exercises the same parse → dedupe →
thread → store path as real mail.

`model` (people, mails, the builder) and `pdf` (attachments) are the parts; `people` the cast;
`threads`, `bills`, `everyday` and `bulk` the content; `generator` puts it in order and `importing`
stores it.
"""
