"""PostgreSQL: a tsvector column over folded text ('simple' configuration, GIN index) ranked over every
match with Okapi bm25 (column-weighted occurrence counts from ts_rank_cd), and pgvector HNSW (cosine)
over chunk embeddings."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from django.core.checks import CheckMessage, Error
from django.db import connection, transaction

from apps.search.backends.base import BaseSearchBackend, KeywordMatch, SearchFilters
from apps.search.documents import IndexDocument
from apps.search.folding import ParsedQuery, QueryTerm, fold_for_index
from apps.search.models import encode_vector

HNSW_INDEX = "search_chunk_embedding_hnsw"
VOCABULARY_SECONDS = 60.0
_vocabulary_refreshed: dict[str, tuple[int, float]] = {}  # database -> (newest document id, monotonic time)
_average_lengths: dict[str, tuple[int, float, float]] = {}  # database -> (newest document id, avgdl, monotonic time)
# D, C, B, A weights: body is C, people B, subject A; times RANK_SCALE they are the SQLite backend's bm25
# column weights (ts_rank_cd refuses weights above 1).
RANK_WEIGHTS = "{0.5, 0.5, 0.5, 1.0}"
RANK_SCALE = 2.0
BM25_K1, BM25_B = 1.2, 0.75

TSVECTOR_SQL = (
    "setweight(to_tsvector('simple', v.title), 'A') || setweight(to_tsvector('simple', v.people), 'B')"
    " || setweight(to_tsvector('simple', v.body), 'C')"
)


def tsquery_term(term: QueryTerm) -> str:
    star = ":*" if term.prefix else ""
    variants = [f"{variant}{star}" for variant in term.variants]
    return variants[0] if len(variants) == 1 else "(" + " | ".join(variants) + ")"


def tsquery(parsed: ParsedQuery, match: KeywordMatch) -> str:
    # Words are runs of letters and digits (see folding.TOKEN_RE), so nothing here needs quoting.
    parts = [tsquery_term(term) for term in parsed.terms]
    parts += ["(" + " <-> ".join(phrase) + ")" for phrase in parsed.phrases]
    return (" & " if match == "all" else " | ").join(parts)


def create_hnsw_index_sql(dimension: int) -> str:
    # Partial on the dimension: rows of a previous embedder that are deleted but not yet vacuumed are
    # still read by CREATE INDEX, and casting them to the new dimension would fail.
    dim = int(dimension)
    return (
        f"CREATE INDEX IF NOT EXISTS {HNSW_INDEX} ON search_chunk"
        f" USING hnsw ((embedding::vector({dim})) vector_cosine_ops) WHERE vector_dims(embedding) = {dim}"
    )


class PostgresSearchBackend(BaseSearchBackend):
    vendor = "postgresql"

    def _write_fulltext(self, written: list[tuple[int, IndexDocument]], *, replaced_ids: list[int]) -> None:
        for start in range(0, len(written), 500):
            batch = written[start : start + 500]
            self._update_tsvectors(
                [pk for pk, _ in batch],
                [fold_for_index(doc.title) for _, doc in batch],
                [fold_for_index(doc.people) for _, doc in batch],
                [fold_for_index(doc.body) for _, doc in batch],
            )

    def _update_tsvectors(self, ids: list[int], titles: list[str], people: list[str], bodies: list[str]) -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE search_document d SET tsv = {TSVECTOR_SQL}"  # noqa: S608 (a constant)
                " FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[]) AS v(id, title, people, body)"
                " WHERE d.id = v.id",
                [ids, titles, people, bodies],
            )

    def rebuild_fulltext(self, progress: Callable[[int], object] | None = None) -> int:
        done = 0
        last = 0
        while True:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT id, title, people, body FROM search_document WHERE id > %s ORDER BY id LIMIT 500", [last]
                )
                rows = cursor.fetchall()
            if not rows:
                break
            with transaction.atomic():
                self._update_tsvectors(
                    [row[0] for row in rows],
                    [fold_for_index(row[1]) for row in rows],
                    [fold_for_index(row[2]) for row in rows],
                    [fold_for_index(row[3]) for row in rows],
                )
            last = rows[-1][0]
            done += len(rows)
            if progress is not None:
                progress(len(rows))
        return done

    def _keyword_ids(
        self, parsed: ParsedQuery, match: KeywordMatch, filters: SearchFilters, limit: int
    ) -> list[tuple[int, float]]:
        """Okapi bm25 over every match, like FTS5's: Σ idf(word) · tf·(k1+1) / (tf + k1·(1 - b + b·dl/avgdl)),
        where tf is the column-weighted count of the word's occurrences (ts_rank_cd of the word alone, no
        normalisation) and dl the document's distinct words (length of its tsvector)."""
        where, params = filters.sql("d")
        # (tsquery, words, any variant matches: their counts add up | a phrase: at most its rarest word's)
        parts = [(tsquery_term(term), list(term.variants), True) for term in parsed.terms]
        parts += [("(" + " <-> ".join(phrase) + ")", list(phrase), False) for phrase in parsed.phrases]
        if not parts:
            return []
        total, frequencies = self.document_frequencies([w for _q, words, _any in parts for w in words])
        average = self._average_length()
        scores: list[str] = []
        score_params: list[Any] = []
        for query, words, variants in parts:
            counts = [frequencies.get(w, 0) for w in words]
            frequency = min(sum(counts) if variants else min(counts), total)
            idf = max(math.log((total - frequency + 0.5) / (frequency + 0.5)), 1e-6) if total else 1.0
            tf = f"{RANK_SCALE} * ts_rank_cd('{RANK_WEIGHTS}', d.tsv, to_tsquery('simple', %s), 0)"
            scores.append(f"%s * {tf} * {BM25_K1 + 1} / ({tf} + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * dl.n))")
            score_params += [idf, query, query]
        sql = (
            f"SELECT d.id, {' + '.join(scores)} AS rank"  # noqa: S608 (filters and words are placeholders)
            " FROM search_document d CROSS JOIN LATERAL (SELECT length(d.tsv) / %s::float AS n) dl"
            f" WHERE d.tsv @@ to_tsquery('simple', %s){where}"
            " ORDER BY rank DESC, d.id DESC LIMIT %s"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*score_params, average, tsquery(parsed, match), *params, limit])
            return [(int(pk), float(rank)) for pk, rank in cursor.fetchall()]

    def _average_length(self) -> float:
        """Mean distinct words per document, cached per database until a document is added or
        VOCABULARY_SECONDS pass (bm25's avgdl)."""
        key = f"{connection.alias}:{connection.settings_dict['NAME']}"
        newest = self._newest_document_id()
        cached = _average_lengths.get(key)
        if cached and cached[0] == newest and time.monotonic() - cached[2] < VOCABULARY_SECONDS:
            return cached[1]
        with connection.cursor() as cursor:
            cursor.execute("SELECT avg(length(tsv)) FROM search_document")
            row = cursor.fetchone()
        average = max(float(row[0] or 1.0), 1.0) if row else 1.0
        _average_lengths[key] = (newest, average, time.monotonic())
        return average

    def _keyword_count(self, parsed: ParsedQuery, filters: SearchFilters) -> int:
        where, params = filters.sql("d")
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(DISTINCT COALESCE(d.message_id, -d.id)) FROM search_document d"  # noqa: S608
                f" WHERE d.tsv @@ to_tsquery('simple', %s){where}",
                [tsquery(parsed, "any"), *params],
            )
            return int(cursor.fetchone()[0])

    def _vocabulary(self, first: str, shortest: int, longest: int) -> list[tuple[str, int]]:
        self.refresh_vocabulary()
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT word, ndoc FROM search_vocabulary WHERE word >= %s AND word < %s"
                " AND length(word) BETWEEN %s AND %s",
                [first, chr(ord(first) + 1), shortest, longest],
            )
            return [(str(word), int(ndoc)) for word, ndoc in cursor.fetchall()]

    def refresh_vocabulary(self, *, force: bool = False) -> bool:
        """search_vocabulary holds ts_stat over every document's tsvector (word, documents). It is refilled
        after each embedding backfill (so after every indexing) at most once per VOCABULARY_SECONDS, and here
        when it is empty while documents exist, or documents arrived since and the interval passed."""
        now = time.monotonic()
        newest = self._newest_document_id()
        key = f"{connection.alias}:{connection.settings_dict['NAME']}"
        refreshed = _vocabulary_refreshed.get(key)
        with transaction.atomic(), connection.cursor() as cursor:
            if not force:
                cursor.execute("SELECT EXISTS (SELECT 1 FROM search_vocabulary)")
                filled = bool(cursor.fetchone()[0])
                if filled and refreshed is None:
                    _vocabulary_refreshed[key] = (newest, now)  # filled by another process; count from now
                    return False
                if (
                    filled
                    and refreshed is not None
                    and (refreshed[0] == newest or now - refreshed[1] < VOCABULARY_SECONDS)
                ):
                    return False
                if not filled and not newest:
                    return False
            cursor.execute("DELETE FROM search_vocabulary")
            cursor.execute(
                "INSERT INTO search_vocabulary (word, ndoc)"
                " SELECT word, ndoc FROM ts_stat('SELECT tsv FROM search_document WHERE tsv IS NOT NULL')"
            )
        _vocabulary_refreshed[key] = (newest, now)
        return True

    def _term_document_counts(self, words: Sequence[str]) -> dict[str, int]:
        counts: dict[str, int] = {}
        with connection.cursor() as cursor:
            for word in words:
                cursor.execute("SELECT count(*) FROM search_document WHERE tsv @@ to_tsquery('simple', %s)", [word])
                counts[word] = int(cursor.fetchone()[0])
        return counts

    def _vector_ids(
        self, vector: np.ndarray, filters: SearchFilters, limit: int, dimension: int, *, exact: bool = False
    ) -> list[tuple[int, int, float]]:
        where, params = filters.sql("d")
        literal = encode_vector(vector, vendor="postgresql")
        dim = int(dimension)
        if exact:
            # No ORDER BY on the distance, so the HNSW index is not used: every chunk of the filtered
            # documents is scored (meant for a few dozen documents).
            with connection.cursor() as cursor:
                cursor.execute(
                    f"SELECT c.document_id, c.chunk_no, c.embedding::vector({dim}) <=> %s::vector({dim})"  # noqa: S608
                    " FROM search_chunk c JOIN search_document d ON d.id = c.document_id"
                    f" WHERE vector_dims(c.embedding) = {dim}{where}",
                    [literal, *params],
                )
                return _best_per_document(cursor.fetchall(), limit)
        fetch = max(limit * 3, 40)
        ef_search = max(int(self.options.get("PG_EF_SEARCH", 100)), fetch)
        sql = (
            f"SELECT c.document_id, c.chunk_no, c.embedding::vector({dim}) <=> %s::vector({dim}) AS distance"  # noqa: S608
            " FROM search_chunk c JOIN search_document d ON d.id = c.document_id"
            f" WHERE vector_dims(c.embedding) = {dim}{where}"
            f" ORDER BY c.embedding::vector({dim}) <=> %s::vector({dim}) LIMIT %s"
        )
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL hnsw.ef_search = {ef_search}")
            # With filters, keep walking the graph until enough rows pass them (pgvector >= 0.8).
            cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            cursor.execute(sql, [literal, *params, literal, fetch])
            return _best_per_document(cursor.fetchall(), limit)

    def _on_embedder_changed(self, dimension: int) -> None:
        with connection.cursor() as cursor:
            # The chunk deletes just before left deferred FK checks queued; DDL refuses to run past them.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")
            if dimension:
                cursor.execute(create_hnsw_index_sql(dimension))

    def check(self) -> list[CheckMessage]:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
                installed = cursor.fetchone()
                cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
                available = cursor.fetchone()
        except Exception as exc:
            return [Error(f"Could not check for pgvector: {exc}", id="search.E003")]
        if installed:
            return []
        if available:
            return [
                Error(
                    "The pgvector extension is available but not installed in this database.",
                    hint="Run `manage.py migrate` as a role allowed to CREATE EXTENSION vector.",
                    id="search.E002",
                )
            ]
        return [
            Error(
                "PostgreSQL has no pgvector extension: semantic search cannot work.",
                hint="Install pgvector (Debian: postgresql-<version>-pgvector) and run `manage.py migrate`.",
                id="search.E002",
            )
        ]


def _best_per_document(rows: list[tuple[Any, ...]], limit: int) -> list[tuple[int, int, float]]:
    """(document id, chunk number, cosine) of each document's best chunk among (document, chunk, distance)
    rows, best `limit` first."""
    best: dict[int, tuple[int, int, float]] = {}
    for document_id, chunk_no, distance in rows:
        similarity = 1.0 - float(distance)
        known = best.get(document_id)
        if known is None or similarity > known[2]:
            best[document_id] = (int(document_id), int(chunk_no), similarity)
    return sorted(best.values(), key=lambda item: -item[2])[:limit]
