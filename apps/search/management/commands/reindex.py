"""`manage.py reindex [--embeddings] [--rebuild] [--reset-embeddings]` with progress bars."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from apps.accounts.models import Message
from apps.search import actions
from apps.search.backends import get_search_backend
from apps.search.embedders import get_embedder
from apps.search.gist import get_gist_embedder, gist_progress
from apps.search.models import SearchChunk, SearchDocument


class Command(BaseCommand):
    help = "Index every stored message (full text); with --embeddings also compute the missing vectors."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--embeddings", action="store_true", help="Embed every document still without vectors.")
        parser.add_argument(
            "--rebuild", action="store_true", help="Also rewrite the full-text index of every stored document."
        )
        parser.add_argument(
            "--reset-embeddings", action="store_true", help="Drop all vectors first so everything is re-embedded."
        )
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        quiet = options["no_progress"] or options["verbosity"] == 0
        started = time.monotonic()
        with tqdm(total=Message.objects.count(), unit="msg", desc="full text", disable=quiet) as bar:
            summary = actions.reindex_all(rebuild_fulltext=options["rebuild"], progress=bar.update)
        self.stdout.write(
            f"Indexed {summary.messages} messages: {summary.created} new, {summary.updated} changed, "
            f"{summary.unchanged} unchanged ({time.monotonic() - started:.1f}s)."
        )
        if options["reset_embeddings"]:
            SearchChunk.objects.all().delete()
            SearchDocument.objects.update(embedded_with="")
        if options["embeddings"] or options["reset_embeddings"]:
            backend = get_search_backend()
            embedder = get_embedder()
            backend.ensure_embedder(embedder)
            pending = SearchDocument.objects.filter(embedded_with="").count()
            gists_done, gists_total = gist_progress()
            started = time.monotonic()
            # The backfill embeds search vectors, then the gists Ask reranks with (apps/search/gist.py).
            total = pending + (gists_total - gists_done if get_gist_embedder() else 0)
            with tqdm(total=total, unit="doc", desc=f"embeddings ({embedder.key}, gists)", disable=quiet) as bar:
                try:
                    done = actions.backfill_embeddings(
                        seconds=0, embedder=embedder, progress=bar.update, requeue=False, raise_if_held=True
                    )
                except actions.BackfillHeld as held:
                    raise CommandError(
                        f"Nothing embedded: {held}. {pending} documents and {gists_total - gists_done} gists are "
                        "pending; run this again when it has finished, or leave them to it."
                    ) from None
            progress = backend.embedding_progress(embedder.key)
            gists_done, gists_total = gist_progress()
            self.stdout.write(
                f"Embedded {done} documents and gists ({time.monotonic() - started:.1f}s); "
                f"{progress.done}/{progress.total} have vectors, {gists_done}/{gists_total} messages a gist."
            )
