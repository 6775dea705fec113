"""SQLite: FTS5 (unicode61, remove_diacritics 2, over folded text) ranked by bm25, and an exact
numpy cosine scan over an in-process float32 matrix that follows the chunk table incrementally."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.core.checks import CheckMessage, Error
from django.db import connection

from apps.search.backends.base import BaseSearchBackend, KeywordMatch, SearchFilters
from apps.search.backends.keyword_index import (
    CHANGE_LOG_KEEP,
    KIND_CODES,
    KeywordIndex,
    PhraseHits,
    forget_keyword_indexes,
    index_answers,
    keyword_index,
    metadata_mask,
)
from apps.search.documents import IndexDocument
from apps.search.folding import ParsedQuery, QueryTerm, fold_for_index

# Column weights for bm25(): subject, people, body (tuned on the dev questions of bench/data/search_questions.json).
BM25_WEIGHTS = (2.0, 1.0, 1.0)
APPEND_PAGE = 4096
# search_document read through its narrow covering index (migration 0005): filters and grouping never
# walk a long body's overflow pages.
DOCUMENTS = "search_document d INDEXED BY search_document_filters"


def fts5_available() -> bool:
    try:
        probe = sqlite3.connect(":memory:")
        try:
            probe.execute("CREATE VIRTUAL TABLE probe USING fts5(x, tokenize = 'unicode61 remove_diacritics 2')")
        finally:
            probe.close()
    except sqlite3.Error:
        return False
    return True


def fts5_term(term: QueryTerm) -> str:
    star = "*" if term.prefix else ""
    variants = [f'"{variant}"{star}' for variant in term.variants]
    return variants[0] if len(variants) == 1 else "(" + " OR ".join(variants) + ")"


def fts5_query(parsed: ParsedQuery, match: KeywordMatch) -> str:
    parts = [fts5_term(term) for term in parsed.terms]
    parts += ['"' + " ".join(phrase) + '"' for phrase in parsed.phrases]
    return (" AND " if match == "all" else " OR ").join(parts)


# The vector scan reads the whole float32 matrix: 96,507 x 512 (198 MB) takes ~20 ms, bound by memory
# bandwidth, not arithmetic. From PREFILTER_MIN_ROWS rows on, a search first scores every row on the matrix
# projected onto its PREFILTER_DIMS principal directions (a quarter of the bytes) and then scores the best
# `prefilter` rows exactly (the "VECTOR_PREFILTER" option, 0 = exact scan of every row). Measured on the
# whole Enron corpus with the 50 bench questions: 128 dims and 3,000 rows keep 497 of the 500 exact top-10
# documents and 4,953 of the 5,000 top-100 (~99%) at ~8 ms instead of ~20.
PREFILTER_DIMS = 128
PREFILTER_CANDIDATES = 3000
PREFILTER_MIN_ROWS = 20_000
PREFILTER_SAMPLE = 20_000
# Rows scored exactly per document asked for (at least `prefilter`): the Enron mails have 2.2 chunks each on
# average, and 3,000 rows held 300 distinct documents for every one of the 119 bench questions (the full
# scan below is the fallback when they do not). For the search page's 300 documents, 10 rows per document
# instead of 30: 11.9 -> 7.8 ms per query, exact top-100 documents kept 99.6% -> 99.1%, top-300 99.6 -> 98.2%.
ROWS_PER_DOCUMENT = 10


@dataclass
class VectorMatrix:
    """Chunk vectors of one database held in memory. `refresh()` appends chunks with ids above the
    loaded maximum and, when the state's generation says rows were deleted, drops the vanished ids;
    a full load only happens the first time, after an embedder switch, or when the table shrank below
    what was loaded (a restored database or a rolled-back test transaction). From PREFILTER_MIN_ROWS rows
    on it also keeps the rows projected on a principal basis computed once from the loaded rows."""

    dimension: int = 0
    embedder: str = ""
    generation: str = ""
    max_id: int = 0
    size: int = 0
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    chunk_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    document_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    chunk_nos: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    account_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    owner_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    kinds: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    dates: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    attachments: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    basis: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    projected: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    full_loads: int = 0
    appended_rows: int = 0
    compactions: int = 0
    tail: int = 0  # the newest loaded chunk as read (see _tail_replaced)
    lock: threading.Lock = field(default_factory=threading.Lock)

    COLUMNS = ("chunk_ids", "document_ids", "chunk_nos", "account_ids", "owner_ids", "kinds", "dates", "attachments")

    def reset(self, dimension: int, embedder: str) -> None:
        self.dimension, self.embedder, self.size, self.max_id = dimension, embedder, 0, 0
        self.vectors = np.zeros((0, dimension), dtype=np.float32)
        self.basis = np.zeros((0, 0), dtype=np.float32)
        self.projected = np.zeros((0, 0), dtype=np.float32)
        for name in self.COLUMNS:
            setattr(self, name, getattr(self, name)[:0])

    def refresh(self, cursor: Any) -> None:
        cursor.execute(
            "SELECT (SELECT generation FROM search_index_state WHERE id = 1),"
            " (SELECT embedder FROM search_index_state WHERE id = 1),"
            " (SELECT dimension FROM search_index_state WHERE id = 1),"
            " (SELECT max(id) FROM search_chunk)"
        )
        generation, embedder, dimension, db_max = cursor.fetchone()
        generation, embedder, dimension, db_max = generation or "", embedder or "", dimension or 0, db_max or 0
        if (
            embedder != self.embedder
            or dimension != self.dimension
            or db_max < self.max_id
            or (generation == self.generation and self._tail_replaced(cursor))
        ):
            self.reset(dimension, embedder)
            self.generation = generation
            self.full_loads += 1
        elif generation != self.generation:
            self._drop_deleted(cursor)
            self.generation = generation
        if db_max > self.max_id and self.dimension:
            self._append(cursor)
        if not self.basis.size and self.size >= PREFILTER_MIN_ROWS and self.dimension > PREFILTER_DIMS:
            self._project()

    def _project(self) -> None:
        """The principal directions of (a sample of) the rows, and every row projected on them."""
        rows = self.vectors[: self.size]
        if self.size > PREFILTER_SAMPLE:
            sample = rows[np.random.default_rng(0).choice(self.size, PREFILTER_SAMPLE, replace=False)]
        else:
            sample = rows
        _values, vectors = np.linalg.eigh(sample.T @ sample)
        basis = np.ascontiguousarray(vectors[:, ::-1][:, :PREFILTER_DIMS], dtype=np.float32)
        projected = np.empty((self.vectors.shape[0], PREFILTER_DIMS), dtype=np.float32)
        for start in range(0, self.size, 16384):
            end = min(self.size, start + 16384)
            projected[start:end] = rows[start:end] @ basis
        self.basis, self.projected = basis, projected

    def _tail_replaced(self, cursor: Any) -> bool:
        """Whether the newest loaded chunk is gone or is now another chunk with no deletion recorded (the
        generation is unchanged): its insert was rolled back, and on SQLite its id may have been reused."""
        if not self.size or int(self.chunk_ids[self.size - 1]) != self.max_id:  # none, or deleted (compacted)
            return False
        cursor.execute("SELECT document_id, chunk_no, embedding FROM search_chunk WHERE id = %s", [self.max_id])
        row = cursor.fetchone()
        return row is None or hash((row[0], row[1], bytes(row[2]))) != self.tail

    def _drop_deleted(self, cursor: Any) -> None:
        cursor.execute("SELECT id FROM search_chunk WHERE id <= %s", [self.max_id])
        live = np.fromiter((row[0] for row in cursor.fetchall()), dtype=np.int64)
        keep = np.isin(self.chunk_ids[: self.size], live, assume_unique=True)
        if keep.all():
            return
        kept = int(keep.sum())
        # New arrays, not an in-place shuffle: searches running outside the lock keep their snapshot.
        self.vectors = self.vectors[: self.size][keep]
        if self.basis.size:
            self.projected = self.projected[: self.size][keep]
        for name in self.COLUMNS:
            setattr(self, name, getattr(self, name)[: self.size][keep])
        self.size = kept
        self.compactions += 1

    def _append(self, cursor: Any) -> None:
        cursor.execute("SELECT count(*) FROM search_chunk WHERE id > %s", [self.max_id])
        expected = int(cursor.fetchone()[0])
        if not expected:
            return
        self._reserve(self.size + expected)
        cursor.execute(
            "SELECT c.id, c.document_id, c.chunk_no, c.embedding, d.account_id, d.kind, d.date, d.has_attachments,"  # noqa: S608
            f" d.owner_id FROM search_chunk c JOIN {DOCUMENTS} ON d.id = c.document_id WHERE c.id > %s ORDER BY c.id",
            [self.max_id],
        )
        # Page by page straight into the preallocated matrix: peak memory stays near the matrix itself.
        while rows := cursor.fetchmany(APPEND_PAGE):
            count = len(rows)
            new_vectors = np.frombuffer(b"".join(bytes(row[3]) for row in rows), dtype="<f4")
            if new_vectors.size != count * self.dimension:
                return  # vectors of another size: an embedder switch is being written; next refresh reloads
            self._reserve(self.size + count)
            start, end = self.size, self.size + count
            self.vectors[start:end] = new_vectors.reshape(count, self.dimension)
            if self.basis.size:
                self.projected[start:end] = self.vectors[start:end] @ self.basis
            self.chunk_ids[start:end] = [row[0] for row in rows]
            self.document_ids[start:end] = [row[1] for row in rows]
            self.chunk_nos[start:end] = [row[2] for row in rows]
            self.account_ids[start:end] = [row[4] if row[4] is not None else -1 for row in rows]
            self.kinds[start:end] = [KIND_CODES.get(row[5], -1) for row in rows]
            dates = np.array([row[6] if row[6] else "NaT" for row in rows], dtype="datetime64[us]")
            self.dates[start:end] = dates.astype("datetime64[s]").astype(np.int64)  # NaT becomes NO_DATE
            self.attachments[start:end] = [bool(row[7]) for row in rows]
            self.owner_ids[start:end] = [row[8] if row[8] is not None else -1 for row in rows]
            self.size = end
            self.max_id = int(rows[-1][0])
            self.tail = hash((rows[-1][1], rows[-1][2], bytes(rows[-1][3])))
            self.appended_rows += count

    def _reserve(self, needed: int) -> None:
        capacity = self.vectors.shape[0]
        if needed <= capacity:
            return
        new_capacity = max(needed, int(capacity * 1.5) + 1024)
        vectors = np.empty((new_capacity, self.dimension), dtype=np.float32)
        vectors[: self.size] = self.vectors[: self.size]
        self.vectors = vectors
        if self.basis.size:
            projected = np.empty((new_capacity, self.basis.shape[1]), dtype=np.float32)
            projected[: self.size] = self.projected[: self.size]
            self.projected = projected
        for name in self.COLUMNS:
            old = getattr(self, name)
            grown = np.empty(new_capacity, dtype=old.dtype)
            grown[: self.size] = old[: self.size]
            setattr(self, name, grown)

    def mask(self, filters: SearchFilters, allowed_documents: np.ndarray | None) -> np.ndarray | None:
        return metadata_mask(
            size=self.size, filters=filters, allowed_documents=allowed_documents, account_ids=self.account_ids,
            owner_ids=self.owner_ids, kinds=self.kinds, attachments=self.attachments, dates=self.dates,
            document_ids=self.document_ids,
        )  # fmt: skip

    def snapshot(self) -> VectorMatrix:
        """The rows loaded now, for a search outside the lock: appends write past `size` or into new arrays
        and compaction builds new arrays, so these views never change under the reader."""
        view = VectorMatrix(dimension=self.dimension, embedder=self.embedder, size=self.size, vectors=self.vectors)
        view.basis, view.projected = self.basis, self.projected
        for name in self.COLUMNS:
            setattr(view, name, getattr(self, name))
        return view

    def search(
        self, vector: np.ndarray, limit: int, mask: np.ndarray | None, *, prefilter: int = 0
    ) -> list[tuple[int, int, float]]:
        """The best `limit` documents by their best chunk's cosine (vectors are unit length). With `prefilter`
        (and a projection), only that many rows, the best on the projection, are scored exactly."""
        size = self.size
        if not size:
            return []
        rows: np.ndarray | None = None
        if mask is not None:
            rows = np.flatnonzero(mask)
            if not rows.size:
                return []
            if rows.size == size:  # the usual account filter of a user whose mail is all here
                rows = None
        candidates = max(prefilter, limit * ROWS_PER_DOCUMENT)
        if prefilter and self.basis.size and (rows.size if rows is not None else size) > candidates:
            reduced = vector @ self.basis
            if rows is None:
                projected = self.projected[:size] @ reduced
            else:  # gathering many rows costs more than scoring them all
                projected = (
                    self.projected[rows] @ reduced if rows.size < size // 4 else (self.projected[:size] @ reduced)[rows]
                )
            best = np.argpartition(-projected, candidates - 1)[:candidates]
            best_rows = rows[best] if rows is not None else best
            found = self._best_documents(best_rows, self.vectors[best_rows] @ vector, limit)
            if len(found) >= limit:
                return found
            # Fewer documents than asked among the candidates (many chunks of few documents): scan everything.
        if rows is not None:
            scores = self.vectors[rows] @ vector if rows.size < size // 4 else (self.vectors[:size] @ vector)[rows]
        else:
            scores = self.vectors[:size] @ vector
        return self._best_documents(rows, scores, limit)

    def _best_documents(self, rows: np.ndarray | None, scores: np.ndarray, limit: int) -> list[tuple[int, int, float]]:
        """(document, chunk number, score) of the best `limit` documents among scored rows (all rows when
        `rows` is None), each at its best chunk."""
        results: list[tuple[int, int, float]] = []
        seen: set[int] = set()
        want = min(scores.size, max(limit * 3, 32))
        while True:
            top = np.argpartition(-scores, want - 1)[:want] if want < scores.size else np.arange(scores.size)
            top = top[np.argsort(-scores[top], kind="stable")]
            results.clear()
            seen.clear()
            for position in top:
                row = int(rows[position]) if rows is not None else int(position)
                document = int(self.document_ids[row])
                if document in seen:
                    continue
                seen.add(document)
                results.append((document, int(self.chunk_nos[row]), float(scores[position])))
                if len(results) >= limit:
                    return results
            if want >= scores.size:
                return results
            want = min(scores.size, want * 4)


_matrices: dict[str, VectorMatrix] = {}
_matrices_lock = threading.Lock()


def vector_matrix(database_key: str) -> VectorMatrix:
    with _matrices_lock:
        matrix = _matrices.get(database_key)
        if matrix is None:
            matrix = _matrices[database_key] = VectorMatrix()
        return matrix


def forget_vector_matrices() -> None:
    """Drop every in-process matrix and keyword index (tests roll the database back under them)."""
    with _matrices_lock:
        _matrices.clear()
    forget_keyword_indexes()


class SQLiteSearchBackend(BaseSearchBackend):
    vendor = "sqlite"

    def _database_key(self) -> str:
        return f"{connection.alias}:{connection.settings_dict['NAME']}"

    @property
    def matrix(self) -> VectorMatrix:
        return vector_matrix(self._database_key())

    def _keyword_index(self, *, background: bool) -> KeywordIndex | None:
        weights = tuple(float(w) for w in self.options.get("BM25_WEIGHTS") or BM25_WEIGHTS)
        return keyword_index(self._database_key(), (weights[0], weights[1], weights[2]), background=background)

    @property
    def keyword_index(self) -> KeywordIndex:
        """The loaded index, loading it now if needed."""
        index = self._keyword_index(background=False)
        assert index is not None
        return index

    def _ready_keyword_index(self) -> KeywordIndex | None:
        """The index when it can answer now; None while its first load runs in the background. Inside a
        transaction it loads here: another connection would not see this transaction's writes."""
        background = bool(self.options.get("KEYWORD_INDEX_BACKGROUND_LOAD", True)) and not connection.in_atomic_block
        return self._keyword_index(background=background)

    def _uses_keyword_index(self, parsed: ParsedQuery) -> bool:
        return bool(self.options.get("KEYWORD_INDEX", True)) and index_answers(parsed)

    def _allowed_documents(self, filters: SearchFilters) -> np.ndarray | None:
        """Ids of the documents passing the filters in-memory metadata cannot judge (None: no such filter)."""
        if not filters.needs_sql_for_vectors():
            return None
        where, params = filters.sql("d")
        # A few named messages: their own index (the covering filter index would read every document).
        table = "search_document d" if filters.message_ids else DOCUMENTS
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT d.id FROM {table} WHERE 1 = 1{where}", params)  # noqa: S608
            return np.fromiter((row[0] for row in cursor.fetchall()), dtype=np.int64)

    def _indexed_keyword_ids(
        self, parsed: ParsedQuery, match: KeywordMatch, filters: SearchFilters, limit: int
    ) -> list[tuple[int, float]] | None:
        index = self._ready_keyword_index()
        if index is None:
            return None
        allowed = self._allowed_documents(filters)
        if allowed is not None and not allowed.size:
            return []
        phrases = self._phrase_hits(parsed)  # outside the lock: other searches of this process need not wait
        with index.lock:  # appends and change marks mutate the arrays: rank under the lock (a few ms)
            with connection.cursor() as cursor:
                index.refresh(cursor)
            mask = index.mask(filters, allowed)
            return index.top(parsed, match_all=match == "all", mask=mask, limit=limit, phrases=phrases)

    def _indexed_keyword_count(self, parsed: ParsedQuery, filters: SearchFilters) -> int | None:
        index = self._ready_keyword_index()
        if index is None:
            return None
        allowed = self._allowed_documents(filters)
        if allowed is not None and not allowed.size:
            return 0
        phrases = self._phrase_hits(parsed)
        with index.lock:
            with connection.cursor() as cursor:
                index.refresh(cursor)
            return index.count(parsed, mask=index.mask(filters, allowed), phrases=phrases)

    def _phrase_hits(self, parsed: ParsedQuery) -> PhraseHits:
        """Each phrase of `parsed` scored by FTS5 alone: (matching document ids, the phrase's bm25 in each).
        Documents written between this and the index's refresh are left out of (or keep) a phrase's score
        for that one search; ids the index has not loaded are skipped."""
        weights = ", ".join(str(float(w)) for w in self.options.get("BM25_WEIGHTS") or BM25_WEIGHTS)
        hits: PhraseHits = []
        for phrase in parsed.phrases:
            try:
                with connection.cursor() as cursor:
                    cursor.execute(
                        f"SELECT rowid, bm25(search_fts, {weights}) FROM search_fts WHERE search_fts MATCH %s",  # noqa: S608
                        ['"' + " ".join(phrase) + '"'],
                    )
                    rows = cursor.fetchall()
            except Exception as exc:  # as on the FTS5 path: a phrase FTS5 cannot parse matches nothing
                if "fts5" not in str(exc).lower() and "syntax" not in str(exc).lower():
                    raise
                rows = []
            hits.append(
                (
                    np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows)),
                    -np.fromiter((row[1] for row in rows), dtype=np.float64, count=len(rows)),
                )
            )
        return hits

    def _write_fulltext(self, written: list[tuple[int, IndexDocument]], *, replaced_ids: list[int]) -> None:
        with connection.cursor() as cursor:
            if replaced_ids:
                # The update trigger logged them for the in-process keyword indexes; keep the log short.
                cursor.execute(
                    "DELETE FROM search_keyword_change WHERE seq < (SELECT max(seq) FROM search_keyword_change) - %s",
                    [CHANGE_LOG_KEEP],
                )
            for start in range(0, len(replaced_ids), 500):
                batch = replaced_ids[start : start + 500]
                placeholders = ", ".join(["%s"] * len(batch))
                cursor.execute(f"DELETE FROM search_fts WHERE rowid IN ({placeholders})", batch)  # noqa: S608
            cursor.executemany(
                "INSERT INTO search_fts (rowid, title, people, body) VALUES (%s, %s, %s, %s)",
                [
                    (pk, fold_for_index(doc.title), fold_for_index(doc.people), fold_for_index(doc.body))
                    for pk, doc in written
                ],
            )

    def rebuild_fulltext(self, progress: Callable[[int], object] | None = None) -> int:
        done = 0
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM search_fts")
            last = 0
            while True:
                cursor.execute(
                    "SELECT id, title, people, body FROM search_document WHERE id > %s ORDER BY id LIMIT 500", [last]
                )
                rows = cursor.fetchall()
                if not rows:
                    break
                cursor.executemany(
                    "INSERT INTO search_fts (rowid, title, people, body) VALUES (%s, %s, %s, %s)",
                    [(pk, fold_for_index(t), fold_for_index(p), fold_for_index(b)) for pk, t, p, b in rows],
                )
                last = rows[-1][0]
                done += len(rows)
                if progress is not None:
                    progress(len(rows))
        return done

    def _keyword_ids(
        self, parsed: ParsedQuery, match: KeywordMatch, filters: SearchFilters, limit: int
    ) -> list[tuple[int, float]]:
        if self._uses_keyword_index(parsed):
            ranked = self._indexed_keyword_ids(parsed, match, filters, limit)
            if ranked is not None:
                return ranked
        return self._fts5_keyword_ids(parsed, match, filters, limit)

    def _fts5_keyword_ids(
        self, parsed: ParsedQuery, match: KeywordMatch, filters: SearchFilters, limit: int
    ) -> list[tuple[int, float]]:
        """bm25 computed by FTS5 itself: phrases, prefixes, non-ASCII words (and the reference for the index)."""
        expression = fts5_query(parsed, match)
        where, params = filters.sql("d")
        try:
            with connection.cursor() as cursor:
                if not where:
                    return self._ranked(cursor, expression, limit)
                # Joining every match to its document to test the filters costs more than ranking. Filters
                # usually keep most documents (a user's own accounts), so rank unfiltered, keep the hits
                # that pass, and only when too few do, rank again with the filters inside the query.
                overfetch = limit * 4
                ranked = self._ranked(cursor, expression, overfetch)
                ids = [pk for pk, _score in ranked]
                cursor.execute(
                    f"SELECT d.id FROM {DOCUMENTS} WHERE d.id IN ({', '.join(['%s'] * len(ids))}){where}"  # noqa: S608
                    if ids
                    else "SELECT 1 WHERE 0",
                    [*ids, *params] if ids else [],
                )
                passing = {row[0] for row in cursor.fetchall()}
                kept = [(pk, score) for pk, score in ranked if pk in passing][:limit]
                if len(kept) >= limit or len(ranked) < overfetch:
                    return kept
                return self._ranked(cursor, expression, limit, where=where, params=params)
        except Exception as exc:  # a query FTS5 cannot parse finds nothing rather than failing the page
            if "fts5" in str(exc).lower() or "syntax" in str(exc).lower():
                return []
            raise

    def _document_refs(self, ids: list[int]) -> dict[int, dict[str, Any]]:
        refs: dict[int, dict[str, Any]] = {}
        index = self._ready_keyword_index() if self.options.get("KEYWORD_INDEX", True) else None
        if index is not None:  # from memory, as fresh as the index after its refresh
            with index.lock:
                with connection.cursor() as cursor:
                    index.refresh(cursor)
                refs = index.references(ids)
            ids = [pk for pk in ids if pk not in refs]
        # Through the covering index: a hit's references never read the document's (long) row.
        with connection.cursor() as cursor:
            for start in range(0, len(ids), 500):
                batch = ids[start : start + 500]
                cursor.execute(
                    f"SELECT d.id, d.kind, d.object_id, d.message_id FROM {DOCUMENTS}"  # noqa: S608
                    f" WHERE d.id IN ({', '.join(['%s'] * len(batch))})",
                    batch,
                )
                for pk, kind, object_id, message_id in cursor.fetchall():
                    refs[pk] = {"id": pk, "kind": kind, "object_id": object_id, "message_id": message_id}
        return refs

    def _ranked(
        self, cursor: Any, expression: str, limit: int, *, where: str = "", params: Sequence[Any] = ()
    ) -> list[tuple[int, float]]:
        """bm25 (column weights BM25_WEIGHTS) over every match, best `limit` first; `where` filters on
        search_document d (joined)."""
        join = f" JOIN {DOCUMENTS} ON d.id = search_fts.rowid" if where else ""
        weights = ", ".join(str(float(w)) for w in self.options.get("BM25_WEIGHTS") or BM25_WEIGHTS)
        cursor.execute(
            f"SELECT search_fts.rowid, bm25(search_fts, {weights}) AS score FROM search_fts{join}"  # noqa: S608
            f" WHERE search_fts MATCH %s{where} ORDER BY score LIMIT %s",
            [expression, *params, limit],
        )
        return [(int(pk), -float(score)) for pk, score in cursor.fetchall()]

    def _keyword_count(self, parsed: ParsedQuery, filters: SearchFilters) -> int:
        if self._uses_keyword_index(parsed):
            count = self._indexed_keyword_count(parsed, filters)
            if count is not None:
                return count
        return self._fts5_keyword_count(parsed, filters)

    def _fts5_keyword_count(self, parsed: ParsedQuery, filters: SearchFilters) -> int:
        where, params = filters.sql("d")
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(DISTINCT COALESCE(d.message_id, -d.id)) FROM search_fts"  # noqa: S608
                    f" JOIN {DOCUMENTS} ON d.id = search_fts.rowid WHERE search_fts MATCH %s{where}",
                    [fts5_query(parsed, "any"), *params],
                )
                return int(cursor.fetchone()[0])
        except Exception as exc:
            if "fts5" in str(exc).lower() or "syntax" in str(exc).lower():
                return 0
            raise

    def _vocabulary(self, first: str, shortest: int, longest: int) -> list[tuple[str, int]]:
        index = self._ready_keyword_index() if self.options.get("KEYWORD_INDEX", True) and first.isascii() else None
        if index is not None:  # ~40 ms less than reading a letter's words from FTS5 when a word looks misspelt
            with index.lock:
                with connection.cursor() as cursor:
                    index.refresh(cursor)
                return index.words(first, shortest, longest)
        # search_fts_vocab is an fts5vocab table: it reads the words straight from the full-text index.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT term, doc FROM search_fts_vocab WHERE term >= %s AND term < %s"
                " AND length(term) BETWEEN %s AND %s",
                [first, chr(ord(first) + 1), shortest, longest],
            )
            return [(str(term), int(doc)) for term, doc in cursor.fetchall()]

    def _term_document_counts(self, words: Sequence[str]) -> dict[str, int]:
        counts: dict[str, int] = {}
        with connection.cursor() as cursor:
            for word in words:
                cursor.execute("SELECT count(*) FROM search_fts WHERE search_fts MATCH %s", [f'"{word}"'])
                counts[word] = int(cursor.fetchone()[0])
        return counts

    def _vector_ids(
        self, vector: np.ndarray, filters: SearchFilters, limit: int, dimension: int, *, exact: bool = False
    ) -> list[tuple[int, int, float]]:
        allowed = self._allowed_documents(filters)
        if allowed is not None and not allowed.size:
            return []
        matrix = self.matrix
        with matrix.lock:
            with connection.cursor() as cursor:
                matrix.refresh(cursor)
            view = matrix.snapshot()
        # The scan runs outside the lock (numpy releases the GIL in the matrix product): searches overlap.
        if view.dimension != vector.shape[0]:
            return []
        prefilter = 0 if exact else int(self.options.get("VECTOR_PREFILTER", PREFILTER_CANDIDATES))
        return view.search(vector, limit, view.mask(filters, allowed), prefilter=prefilter)

    def check(self) -> list[CheckMessage]:
        if fts5_available():
            return []
        return [
            Error(
                "SQLite was built without FTS5: keyword search cannot work.",
                hint="Use a Python whose sqlite3 module includes FTS5 (any current CPython build), or PostgreSQL.",
                id="search.E001",
            )
        ]
