"""SQLite: an in-process keyword index that ranks an OR (or AND) query of plain words exactly as FTS5's
`bm25()` does, without asking SQLite to score every match.

FTS5 computes bm25 row by row in its VM (~50 ms for a question of common words over 45k mails). This index
holds, per document, the column-weighted frequency of each word (a scipy CSC matrix, words by rows) and the
document's length in tokens, read from FTS5's own tables: the folded text it indexed (search_fts_content,
space-separated tokens, see folding.fold_for_index) and its per-row sizes (search_fts_docsize). The score is
FTS5's formula (fts5_aux.c, k1 1.2, b 0.75) with the same column weights, so hits and scores agree with the
FTS5 path (tests/search/test_keyword_index.py compares both); the filters are masks over per-row metadata,
as for the vector matrix.

Freshness: `refresh()` (one small query per search) appends documents above the newest loaded id and
re-reads the documents named by the search_keyword_change log (migration 0006: triggers on update and
delete) after the last entry it saw; changed and deleted rows are marked dead and replaced. It reloads in
full the first time, when the database went backwards (a restored file, a rolled-back test) or the log was
pruned past its position, and when more than a quarter of its rows are dead (DEAD_RELOAD_SHARE).

Positions are not kept: a phrase ("e-learning", "plant's", "PL-1" are phrases of two words) is scored by
FTS5 alone (a phrase-only MATCH, a few ms) and its per-document bm25 is added to the words' scores. FTS5's
bm25 is a sum over the query's phrases, each with its own idf, so the sum is the whole query's bm25 exactly.
Queries with words outside ASCII go to FTS5 (unicode61 folds some scripts differently from Python's
lower()). A prefix (the word being typed) is the union of the postings of the words it starts.
"""

from __future__ import annotations

import bisect
import logging
import math
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from apps.search.folding import ParsedQuery
from apps.search.models import DocumentKind

if TYPE_CHECKING:  # scipy (~34 MB) is imported by the first index build, not by every process that indexes
    import scipy.sparse as sp

logger = logging.getLogger(__name__)

KIND_CODES = {kind.value: code for code, kind in enumerate(DocumentKind)}
NO_DATE = np.iinfo(np.int64).min
K1 = 1.2  # fts5_aux.c
B = 0.75
LOAD_PAGE = 512  # documents per step of a load (each step holds the GIL for ~50 ms at most)
# Delta segments (documents appended since the last merge) are folded into the base matrix when there are
# more than this many of them, or when they hold more than DELTA_MERGE_SHARE of its entries.
MAX_SEGMENTS = 8
DELTA_MERGE_SHARE = 0.1
# Rows of changed or deleted documents stay in the postings, masked, until a reload: when more than this
# share of the rows (and more than DEAD_RELOAD_MIN_ROWS) are dead.
DEAD_RELOAD_SHARE = 0.25
DEAD_RELOAD_MIN_ROWS = 1000
# Writers keep this many newest change-log entries (a process more than that far behind reloads in full).
CHANGE_LOG_KEEP = 20_000

FILTER_SELECT = (  # columns of search_document d
    "d.account_id, d.owner_id, d.message_id, d.kind, d.date, d.has_attachments, d.object_id"
)
KIND_NAMES = {code: kind for kind, code in KIND_CODES.items()}


def metadata_mask(
    *,
    size: int,
    filters: Any,
    allowed_documents: np.ndarray | None,
    account_ids: np.ndarray,
    owner_ids: np.ndarray,
    kinds: np.ndarray,
    attachments: np.ndarray,
    dates: np.ndarray,
    document_ids: np.ndarray,
) -> np.ndarray | None:
    """Rows passing `filters` (a SearchFilters) judged from per-row metadata, None when nothing restricts;
    filters the metadata does not carry come resolved to `allowed_documents` by SQL."""
    mask: np.ndarray | None = None

    def both(current: np.ndarray | None, condition: np.ndarray) -> np.ndarray:
        return condition if current is None else current & condition

    if filters.account_ids is not None:
        accounts = account_ids[:size]
        if len(filters.account_ids) == 1:
            allowed = accounts == filters.account_ids[0]
        else:
            allowed = np.isin(accounts, np.array(filters.account_ids, dtype=np.int64))
        if filters.owner_id is not None:
            allowed |= (accounts == -1) & (owner_ids[:size] == filters.owner_id)
        mask = both(mask, allowed)
    if filters.kinds and set(filters.kinds) != set(KIND_CODES):
        codes = np.array([KIND_CODES.get(kind, -2) for kind in filters.kinds], dtype=np.int8)
        mask = both(mask, np.isin(kinds[:size], codes))
    if filters.has_attachment is not None:
        mask = both(mask, attachments[:size] == filters.has_attachment)
    if filters.date_from is not None:
        mask = both(mask, dates[:size] >= int(filters.date_from.timestamp()))
    if filters.date_to is not None:
        row_dates = dates[:size]
        mask = both(mask, (row_dates <= int(filters.date_to.timestamp())) & (row_dates != NO_DATE))
    if allowed_documents is not None:
        mask = both(mask, np.isin(document_ids[:size], allowed_documents))
    return mask


def to_epoch_seconds(values: list[Any]) -> np.ndarray:
    """Stored datetimes (ISO text on SQLite, or None) as int64 seconds; None becomes NO_DATE."""
    dates = np.array([value if value else "NaT" for value in values], dtype="datetime64[us]")
    return dates.astype("datetime64[s]").astype(np.int64)


def _varints(blob: bytes) -> list[int]:
    """SQLite varints (FTS5's docsize record: one token count per column)."""
    values: list[int] = []
    value = 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            values.append(value)
            value = 0
    return values


def _sum_duplicates(
    row_ids: np.ndarray, word_ids: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One posting per (row, word) with the weights of its repeats summed: a page of mail holds each word of a
    document once instead of once per occurrence (a third of the entries on synthetic Zipf text), so a full
    load's pages and their concatenation (its peak memory) are that much smaller. The matrix built from them
    is the same (sum_duplicates would have summed the repeats there)."""
    if not row_ids.size:
        return row_ids, word_ids, weights
    keys = (word_ids.astype(np.int64) << 32) | row_ids.astype(np.int64)
    unique, inverse = np.unique(keys, return_inverse=True)
    summed = np.bincount(inverse, weights=weights, minlength=unique.size).astype(np.float32)
    return (unique & 0xFFFFFFFF).astype(np.int32), (unique >> 32).astype(np.int32), summed


def _concatenate_and_free(pieces: list[list[np.ndarray]], column: int) -> np.ndarray:
    joined = np.concatenate([piece[column] for piece in pieces])
    for piece in pieces:
        piece[column] = joined[:0]
    return joined


# Per phrase of a query: (document ids matching it, the phrase's bm25 in each), as FTS5 scores the phrase alone.
PhraseHits = list[tuple[np.ndarray, np.ndarray]]


def index_answers(parsed: ParsedQuery) -> bool:
    """True when every part of `parsed` is a word, word prefix or phrase of ASCII words (module docstring)."""
    if parsed.is_empty:
        return False
    return all(all(v.isascii() and v for v in term.variants) for term in parsed.terms) and all(
        all(word.isascii() and word for word in phrase) for phrase in parsed.phrases
    )


@dataclass
class _Segment:
    """Word-major postings of some rows: for word id w, rows indices[indptr[w]:indptr[w+1]], weighted counts
    in data (words added after the segment was built have no postings in it)."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray

    @property
    def words(self) -> int:
        return len(self.indptr) - 1

    @property
    def entries(self) -> int:
        return len(self.indices)

    @classmethod
    def of(cls, matrix: sp.csc_matrix) -> _Segment:
        matrix.sum_duplicates()
        return cls(
            matrix.indptr.astype(np.int64, copy=False),
            matrix.indices.astype(np.int32, copy=False),
            matrix.data.astype(np.float32, copy=False),
        )

    def matrix(self, rows: int, words: int) -> sp.csc_matrix:
        import scipy.sparse as sp

        indptr = np.concatenate([self.indptr, np.full(words - self.words, self.indptr[-1], dtype=np.int64)])
        return sp.csc_matrix((self.data, self.indices, indptr), shape=(rows, words))


@dataclass
class KeywordIndex:
    weights: tuple[float, float, float]
    max_id: int = 0
    change_seq: int = 0
    size: int = 0
    live: int = 0
    tokens: float = 0.0  # tokens in every live row, all columns (FTS5's nToken)
    vocabulary: dict[str, int] = field(default_factory=dict)
    segments: list[_Segment] = field(default_factory=list)
    document_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    alive: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    message_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    message_slots: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    object_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    account_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    owner_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    kinds: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    dates: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    attachments: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    row_of: dict[int, int] = field(default_factory=dict)  # live row of each document id
    slot_of: dict[int, int] = field(default_factory=dict)  # dense number of each message key (counts)
    full_loads: int = 0
    appended_rows: int = 0
    # The newest loaded row as read (a hash of its text and metadata): on SQLite a rolled-back insert's id is
    # given again to the next insert, so "max(id) did not shrink" alone would keep the vanished row's words.
    tail: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    _words_key: tuple[int, int, int] = (-1, -1, -1)
    _sorted_words: list[str] = field(default_factory=list)
    _word_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    COLUMNS = (
        "document_ids", "lengths", "alive", "message_keys", "message_slots", "object_ids", "account_ids", "owner_ids",
        "kinds", "dates", "attachments",
    )  # fmt: skip

    # ------------------------------------------------------------------ freshness

    def refresh(self, cursor: Any) -> None:
        cursor.execute(
            "SELECT (SELECT max(id) FROM search_document),"
            " (SELECT max(seq) FROM search_keyword_change), (SELECT min(seq) FROM search_keyword_change)"
        )
        db_max, newest_change, oldest_change = (value or 0 for value in cursor.fetchone())
        pruned_past_us = oldest_change > self.change_seq + 1 and self.full_loads
        if not self.full_loads or db_max < self.max_id or newest_change < self.change_seq or pruned_past_us:
            self._reset()
            self.change_seq = newest_change
        else:
            if newest_change > self.change_seq:
                self._apply_changes(cursor, newest_change)
            if self._tail_replaced(cursor):
                self._reset()
                self.change_seq = newest_change
        if db_max > self.max_id:
            self._append(cursor, f"c.id > {int(self.max_id)}")
        if self.size - self.live > max(DEAD_RELOAD_SHARE * self.size, DEAD_RELOAD_MIN_ROWS):
            self._reset()
            self.change_seq = newest_change
            self._append(cursor, "1 = 1")

    def _tail_replaced(self, cursor: Any) -> bool:
        """Whether the newest loaded row is gone or is now another row, although no change was logged for it:
        its insert was rolled back (the change log's entries with it) and its id may have been reused."""
        if self.max_id not in self.row_of:  # deleted or changed through the log: applied above
            return False
        cursor.execute(f"{self._select()} WHERE c.id = {int(self.max_id)}")
        row = cursor.fetchone()
        return row is None or hash(tuple(row)) != self.tail

    def _select(self) -> str:
        return (
            f"SELECT c.id, c.c0, c.c1, c.c2, s.sz, {FILTER_SELECT} FROM search_fts_content c"  # noqa: S608
            " JOIN search_fts_docsize s ON s.id = c.id"
            " JOIN search_document d INDEXED BY search_document_filters ON d.id = c.id"
        )

    def _reset(self) -> None:
        self.max_id = self.size = self.live = 0
        self.tokens = 0.0
        self.vocabulary = {}
        self.segments = []
        self.row_of = {}
        self.slot_of = {}
        for name in self.COLUMNS:
            setattr(self, name, getattr(self, name)[:0])
        self.full_loads += 1

    def _apply_changes(self, cursor: Any, newest_change: int) -> None:
        cursor.execute(
            "SELECT DISTINCT document_id FROM search_keyword_change WHERE seq > %s AND seq <= %s",
            [self.change_seq, newest_change],
        )
        changed = [int(row[0]) for row in cursor.fetchall()]
        self.change_seq = newest_change
        known = [pk for pk in changed if pk in self.row_of]
        if not known:
            return
        for pk in known:
            row = self.row_of.pop(pk)
            if self.alive[row]:
                self.alive[row] = False
                self.live -= 1
                self.tokens -= float(self.lengths[row])
        # Documents that still exist come back as new rows with their current text and metadata.
        for start in range(0, len(known), 500):
            batch = known[start : start + 500]
            self._append(cursor, f"c.id IN ({', '.join(str(int(pk)) for pk in batch)}) AND c.id <= {self.max_id}")

    def _append(self, cursor: Any, where: str) -> None:
        cursor.execute(f"{self._select()} WHERE {where} ORDER BY c.id")
        start = self.size
        pieces: list[list[np.ndarray]] = []
        while rows := cursor.fetchmany(LOAD_PAGE):
            pieces.append(list(self._add_rows(rows)))
        if not pieces:
            return
        # One segment for everything read now (a full load is one matrix, not one per page). Each piece is
        # freed as soon as it is copied: the pages' postings and their concatenation are the load's peak.
        row_ids, word_ids, weights = (_concatenate_and_free(pieces, i) for i in range(3))
        del pieces
        import scipy.sparse as sp

        matrix = sp.csc_matrix((weights, (row_ids, word_ids)), shape=(self.size, len(self.vocabulary)))
        del row_ids, word_ids, weights
        self.segments = [*self.segments, _Segment.of(matrix)]
        self.appended_rows += self.size - start
        self._merge_segments()

    def _add_rows(self, rows: list[tuple[Any, ...]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Metadata of `rows` stored; their postings returned as (row ids, word ids, column weights)."""
        count = len(rows)
        start = self.size
        self._reserve(start + count)
        words: list[str] = []
        counts: list[int] = []
        for row in rows:
            for text in row[1:4]:
                parts = text.split() if text else []
                words.extend(parts)
                counts.append(len(parts))
        vocabulary = self.vocabulary
        for word in set(words).difference(vocabulary):
            vocabulary[word] = len(vocabulary)
        word_ids = np.fromiter(map(vocabulary.__getitem__, words), dtype=np.int32, count=len(words))
        per_column = np.array(counts, dtype=np.int64)
        row_ids = np.repeat(np.repeat(np.arange(start, start + count, dtype=np.int32), 3), per_column)
        column_weights = np.tile(np.array(self.weights, dtype=np.float32), count)
        weights = np.repeat(column_weights, per_column)
        row_ids, word_ids, weights = _sum_duplicates(row_ids, word_ids, weights)
        end = start + count
        self.document_ids[start:end] = [row[0] for row in rows]
        lengths = [float(sum(_varints(bytes(row[4] or b"")))) for row in rows]
        self.lengths[start:end] = lengths
        self.alive[start:end] = True
        self.account_ids[start:end] = [row[5] if row[5] is not None else -1 for row in rows]
        self.owner_ids[start:end] = [row[6] if row[6] is not None else -1 for row in rows]
        keys = [row[7] if row[7] is not None else -row[0] for row in rows]
        self.message_keys[start:end] = keys
        slot_of = self.slot_of
        self.message_slots[start:end] = [slot_of.setdefault(key, len(slot_of)) for key in keys]
        self.object_ids[start:end] = [row[11] for row in rows]
        self.kinds[start:end] = [KIND_CODES.get(row[8], -1) for row in rows]
        self.dates[start:end] = to_epoch_seconds([row[9] for row in rows])
        self.attachments[start:end] = [bool(row[10]) for row in rows]
        for offset, row in enumerate(rows):
            self.row_of[int(row[0])] = start + offset
        self.size = end
        self.live += count
        self.tokens += sum(lengths)
        if int(rows[-1][0]) >= self.max_id:
            self.max_id = int(rows[-1][0])
            self.tail = hash(tuple(rows[-1]))
        return row_ids, word_ids, weights

    def _merge_segments(self) -> None:
        """Small delta segments are merged among themselves (cheap); into the base only when they hold more than
        DELTA_MERGE_SHARE of its entries, so arriving mail does not rewrite the whole matrix every few batches."""
        if len(self.segments) < 2:
            return
        base, *delta = self.segments
        delta_entries = sum(segment.entries for segment in delta)
        words = len(self.vocabulary)
        if delta_entries > DELTA_MERGE_SHARE * base.entries:
            parts = self.segments
        elif len(delta) > MAX_SEGMENTS:
            parts = delta
        else:
            return
        import scipy.sparse as sp

        merged = sum((segment.matrix(self.size, words) for segment in parts[1:]), parts[0].matrix(self.size, words))
        combined = _Segment.of(sp.csc_matrix(merged))
        self.segments = [combined] if parts is self.segments else [base, combined]

    def _reserve(self, needed: int) -> None:
        capacity = len(self.document_ids)
        if needed <= capacity:
            return
        new_capacity = max(needed, int(capacity * 1.5) + 1024)
        for name in self.COLUMNS:
            old = getattr(self, name)
            grown = np.zeros(new_capacity, dtype=old.dtype)
            grown[: self.size] = old[: self.size]
            setattr(self, name, grown)

    # ------------------------------------------------------------------ queries

    def postings(self, word: str) -> tuple[np.ndarray, np.ndarray]:
        """(live rows containing `word`, its column-weighted frequency in each)."""
        word_id = self.vocabulary.get(word)
        if word_id is None:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        rows: list[np.ndarray] = []
        frequencies: list[np.ndarray] = []
        for segment in self.segments:
            if word_id < segment.words:
                begin, end = segment.indptr[word_id], segment.indptr[word_id + 1]
                rows.append(segment.indices[begin:end])
                frequencies.append(segment.data[begin:end])
        if not rows:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        all_rows, all_frequencies = (rows[0], frequencies[0]) if len(rows) == 1 else (
            np.concatenate(rows), np.concatenate(frequencies)
        )  # fmt: skip
        live = self.alive[all_rows]
        return (all_rows, all_frequencies) if live.all() else (all_rows[live], all_frequencies[live])

    def phrase_rows(self, document_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(live rows of `document_ids`, the position in `document_ids` of each); ids not loaded are left out."""
        positions = [i for i, pk in enumerate(document_ids.tolist()) if pk in self.row_of]
        rows = np.fromiter((self.row_of[int(document_ids[i])] for i in positions), dtype=np.int64, count=len(positions))
        index = np.asarray(positions, dtype=np.int64)
        live = self.alive[rows]
        return (rows, index) if live.all() else (rows[live], index[live])

    def scores(
        self, parsed: ParsedQuery, *, match_all: bool, phrases: PhraseHits | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(bm25 score of every row, rows that match): FTS5's bm25 of the query `fts5_query(parsed, …)`, where
        each variant of each word is one phrase; `phrases` are the query's phrases as FTS5 scored them."""
        size = self.size
        scores = np.zeros(size, dtype=np.float64)
        matched = np.zeros(size, dtype=bool)
        if not self.live:
            return scores, matched
        rows_total = float(self.live)
        average = self.tokens / rows_total
        term_hits = np.zeros(size, dtype=np.int32) if match_all else None
        for term in parsed.terms:
            in_term = np.zeros(size, dtype=bool) if match_all else None
            for variant in term.variants:
                rows, frequencies = self.prefix_postings(variant) if term.prefix else self.postings(variant)
                if not rows.size:
                    continue
                idf = math.log((rows_total - rows.size + 0.5) / (rows.size + 0.5))
                idf = idf if idf > 0.0 else 1e-6
                weighted = frequencies.astype(np.float64)
                norm = K1 * (1.0 - B + B * self.lengths[rows] / average)
                scores[rows] += idf * (weighted * (K1 + 1.0)) / (weighted + norm)
                matched[rows] = True
                if in_term is not None:
                    in_term[rows] = True
            if term_hits is not None and in_term is not None:
                term_hits += in_term
        for document_ids, phrase_scores in phrases or []:
            rows, positions = self.phrase_rows(document_ids)
            scores[rows] += phrase_scores[positions]
            matched[rows] = True
            if term_hits is not None:
                term_hits[rows] += 1
        if term_hits is not None:
            matched &= term_hits == len(parsed.terms) + len(phrases or [])
        return scores, matched

    def candidates(
        self, parsed: ParsedQuery, *, match_all: bool, mask: np.ndarray | None, phrases: PhraseHits | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(matching rows that pass `mask`, their scores)."""
        scores, matched = self.scores(parsed, match_all=match_all, phrases=phrases)
        if mask is not None:
            matched &= mask
        rows = np.flatnonzero(matched)
        return rows, scores[rows]

    def top(
        self,
        parsed: ParsedQuery,
        *,
        match_all: bool,
        mask: np.ndarray | None,
        limit: int,
        phrases: PhraseHits | None = None,
    ) -> list[tuple[int, float]]:
        """The best `limit` (document id, score), best first (ties: lower document id first)."""
        rows, row_scores = self.candidates(parsed, match_all=match_all, mask=mask, phrases=phrases)
        if not rows.size or limit <= 0:
            return []
        if rows.size > limit:
            # Everything scoring at least the limit-th best, ties at the cut included: the cut below is then
            # by document id, the same whatever order argpartition left the ties in.
            kth = row_scores[np.argpartition(-row_scores, limit - 1)[limit - 1]]
            best = row_scores >= kth
            rows, row_scores = rows[best], row_scores[best]
        documents = self.document_ids[rows]
        order = np.lexsort((documents, -row_scores))[:limit]
        return [(int(documents[i]), float(row_scores[i])) for i in order]

    def count(self, parsed: ParsedQuery, *, mask: np.ndarray | None, phrases: PhraseHits | None = None) -> int:
        """Distinct messages (an attachment counts for its message) and other documents matching any word."""
        matched = np.zeros(self.size, dtype=bool)
        for term in parsed.terms:
            for variant in term.variants:
                matched[(self.prefix_postings(variant) if term.prefix else self.postings(variant))[0]] = True
        for document_ids, _scores in phrases or []:
            matched[self.phrase_rows(document_ids)[0]] = True
        if mask is not None:
            matched &= mask
        seen = np.zeros(len(self.slot_of), dtype=bool)
        seen[self.message_slots[: self.size][matched]] = True
        return int(np.count_nonzero(seen))

    def _sorted_vocabulary(self) -> list[str]:
        """Every indexed word in order (and each one's row count), rebuilt when words or postings were added."""
        key = (len(self.vocabulary), len(self.segments), sum(segment.entries for segment in self.segments))
        if self._words_key != key:
            counts = np.zeros(len(self.vocabulary), dtype=np.int64)
            for segment in self.segments:
                counts[: segment.words] += np.diff(segment.indptr)
            self._sorted_words, self._word_counts, self._words_key = sorted(self.vocabulary), counts, key
        return self._sorted_words

    def prefix_postings(self, prefix: str) -> tuple[np.ndarray, np.ndarray]:
        """(live rows containing a word that starts with `prefix`, the weighted count of such words in each):
        FTS5's `"prefix"*` phrase, one phrase whatever the words."""
        ordered = self._sorted_vocabulary()
        begin = bisect.bisect_left(ordered, prefix)
        end = bisect.bisect_left(ordered, prefix[:-1] + chr(ord(prefix[-1]) + 1))
        parts = [found for found in (self.postings(word) for word in ordered[begin:end]) if found[0].size]
        if len(parts) <= 1:
            return parts[0] if parts else (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))
        rows, inverse = np.unique(np.concatenate([part[0] for part in parts]), return_inverse=True)
        frequencies = np.bincount(inverse, weights=np.concatenate([part[1] for part in parts]))
        return rows.astype(np.int32), frequencies

    def words(self, first: str, shortest: int, longest: int) -> list[tuple[str, int]]:
        """Indexed words starting with the letter `first`, `shortest` to `longest` letters long, with how many
        rows contain each (rows of changed or deleted documents count until the next reload)."""
        ordered = self._sorted_vocabulary()
        begin, end = bisect.bisect_left(ordered, first), bisect.bisect_left(ordered, chr(ord(first) + 1))
        vocabulary, counts = self.vocabulary, self._word_counts
        return [
            (word, int(counts[vocabulary[word]]))
            for word in ordered[begin:end]
            if shortest <= len(word) <= longest and counts[vocabulary[word]]
        ]

    def references(self, document_ids: list[int]) -> dict[int, dict[str, Any]]:
        """{document id: {"id", "kind", "object_id", "message_id"}} of the live documents among `document_ids`."""
        row_of = self.row_of
        found = [(pk, row) for pk in document_ids if (row := row_of.get(pk)) is not None]
        if not found:
            return {}
        rows = np.fromiter((row for _pk, row in found), dtype=np.int64, count=len(found))
        # Whole columns at once: reading numpy scalars one by one cost ~1 ms for 300 hits.
        keys = self.message_keys[rows].tolist()
        kinds = self.kinds[rows].tolist()
        objects = self.object_ids[rows].tolist()
        refs: dict[int, dict[str, Any]] = {}
        for (pk, _row), key, code, object_id in zip(found, keys, kinds, objects, strict=True):
            kind = KIND_NAMES.get(code)
            if kind is None:
                continue
            refs[pk] = {"id": pk, "kind": kind, "object_id": object_id, "message_id": key if key > 0 else None}
        return refs

    def mask(self, filters: Any, allowed_documents: np.ndarray | None) -> np.ndarray | None:
        return metadata_mask(
            size=self.size, filters=filters, allowed_documents=allowed_documents, account_ids=self.account_ids,
            owner_ids=self.owner_ids, kinds=self.kinds, attachments=self.attachments, dates=self.dates,
            document_ids=self.document_ids,
        )  # fmt: skip

    def memory_bytes(self) -> int:
        arrays = sum(getattr(self, name).nbytes for name in self.COLUMNS)
        postings = sum(s.indptr.nbytes + s.indices.nbytes + s.data.nbytes for s in self.segments)
        return arrays + postings


_indexes: dict[tuple[str, tuple[float, ...]], KeywordIndex] = {}
_loading: set[tuple[str, tuple[float, ...]]] = set()
_failed_at: dict[tuple[str, tuple[float, ...]], float] = {}  # a failed background load is retried after a pause
RETRY_SECONDS = 60
_epoch = [0]  # bumped by forget_keyword_indexes: a load started before that is thrown away
_indexes_lock = threading.Lock()


def keyword_index(database_key: str, weights: tuple[float, float, float], *, background: bool) -> KeywordIndex | None:
    """This process's index of the database. The first load reads every document (~10 s for 45k mails):
    with `background` it runs in a thread and None is returned until it is done (callers rank with FTS5
    meanwhile); without, an empty index is returned and the caller's refresh loads it."""
    key = (database_key, weights)
    with _indexes_lock:
        index = _indexes.get(key)
        if index is not None:
            return index
        if not background:
            index = _indexes[key] = KeywordIndex(weights=weights)
            return index
        if key not in _loading and time.monotonic() - _failed_at.get(key, -RETRY_SECONDS) >= RETRY_SECONDS:
            _loading.add(key)
            thread = threading.Thread(
                target=_load, args=(key, weights, _epoch[0]), name="search-keyword-index", daemon=True
            )
            thread.start()
        return None


def _load(key: tuple[str, tuple[float, ...]], weights: tuple[float, float, float], epoch: int) -> None:
    from django.db import connection  # this thread's own connection, closed when done

    index = KeywordIndex(weights=weights)
    try:
        with index.lock, connection.cursor() as cursor:
            index.refresh(cursor)
        with _indexes_lock:
            if epoch == _epoch[0]:
                _indexes.setdefault(key, index)
        logger.info("search: keyword index loaded (%d documents, %.0f MB)", index.live, index.memory_bytes() / 1e6)
    except Exception:
        logger.exception(
            "search: loading the keyword index failed; keyword search uses FTS5 (next try in %d s)", RETRY_SECONDS
        )
        with _indexes_lock:
            _failed_at[key] = time.monotonic()
    finally:
        with _indexes_lock:
            _loading.discard(key)
        connection.close()


def forget_keyword_indexes() -> None:
    """Drop every in-process keyword index (tests roll the database back under it)."""
    with _indexes_lock:
        _indexes.clear()
        _loading.clear()
        _failed_at.clear()
        _epoch[0] += 1
