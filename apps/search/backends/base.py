"""The search backend interface (after Wagtail's django-modelsearch): documents in, ranked hits out.

The base class owns everything that is the same on every database: document upserts through the ORM,
query parsing, dropping query words that nearly every document contains (by document frequency),
weighted reciprocal-rank fusion, snippets and the embedding backfill. A vendor subclass supplies the
full-text index, the vector search and its checks.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from django.core.checks import CheckMessage
from django.db import connection, transaction
from django.db.models.functions import Substr

from apps.accounts.models import MailFolder, MessageLocation
from apps.search.documents import IndexDocument, chunk_texts
from apps.search.embedders import Embedder, embed_query_cached, get_embedder
from apps.search.folding import SNIPPET_SCAN_CHARS, ParsedQuery, QueryTerm, fold_tokens, highlight, parse_query
from apps.search.headers import write_header_rows
from apps.search.models import DocumentKind, SearchChunk, SearchDocument, SearchHeaders, SearchIndexState
from mailagent.bulk import insert_values

if TYPE_CHECKING:
    import numpy as np  # loaded where it is used: numpy (~14 MB) stays out of processes that never search

logger = logging.getLogger(__name__)

Mode = Literal["keyword", "semantic", "hybrid"]
MODES: tuple[Mode, ...] = ("keyword", "semantic", "hybrid")
KeywordMatch = Literal["all", "any"]


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Restrictions applied inside the index queries. `account_ids=None` means every account;
    an empty tuple means none (a user without accounts finds nothing)."""

    account_ids: tuple[int, ...] | None = None
    folder: str | None = None
    date_from: dt.datetime | None = None
    date_to: dt.datetime | None = None
    from_address: str | None = None
    to_address: str | None = None
    has_attachment: bool | None = None
    kinds: tuple[str, ...] | None = None
    # With account_ids: also this user's own documents that belong to no account (library files).
    owner_id: int | None = None
    # SQL conditions over search_document (written with "{d}" for its alias) and their parameters: the search
    # operators that need the message table (is:unread, subject:, filename:, …), built in selectors.
    conditions: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    # Words or phrases (as typed) a document must not contain: `-word` in the search syntax.
    exclude_words: tuple[str, ...] = ()
    # Only the documents of these messages (each message and its attachments): a reranker's shortlist.
    message_ids: tuple[int, ...] | None = None

    @property
    def matches_nothing(self) -> bool:
        no_accounts = self.account_ids is not None and not self.account_ids and self.owner_id is None
        return no_accounts or (self.message_ids is not None and not self.message_ids)

    def sql(self, alias: str = "d") -> tuple[str, list[Any]]:
        """A WHERE fragment (starting with " AND ") over search_document aliased `alias`."""
        clauses: list[str] = []
        params: list[Any] = []
        ops = connection.ops
        if self.account_ids is not None:
            owned = f"({alias}.account_id IS NULL AND {alias}.owner_id = %s)" if self.owner_id is not None else ""
            if not self.account_ids:
                clauses.append(owned or "1 = 0")
            else:
                accounts = f"{alias}.account_id IN ({', '.join(['%s'] * len(self.account_ids))})"
                clauses.append(f"({accounts} OR {owned})" if owned else accounts)
                params.extend(self.account_ids)
            if owned:
                params.append(self.owner_id)
        if self.kinds:
            clauses.append(f"{alias}.kind IN ({', '.join(['%s'] * len(self.kinds))})")
            params.extend(self.kinds)
        if self.folder:
            # A file by its folder; mail by any of its locations (a copy in two folders is in both).
            located = connection.ops.quote_name(MessageLocation._meta.db_table)
            folders = connection.ops.quote_name(MailFolder._meta.db_table)
            clauses.append(
                f"(({alias}.kind = 'file' AND {alias}.folder = %s) OR {alias}.message_id IN "  # noqa: S608
                f"(SELECT l.message_id FROM {located} l JOIN {folders} f ON f.id = l.folder_id WHERE f.name = %s))"
            )
            params.extend([self.folder, self.folder])
        if self.date_from is not None:
            clauses.append(f"{alias}.date >= %s")
            params.append(ops.adapt_datetimefield_value(self.date_from))
        if self.date_to is not None:
            clauses.append(f"{alias}.date <= %s")
            params.append(ops.adapt_datetimefield_value(self.date_to))
        if self.from_address:
            clauses.append(f"{alias}.from_address LIKE %s ESCAPE '\\'")
            params.append(_like_pattern(self.from_address))
        if self.to_address:
            clauses.append(f"{alias}.recipients LIKE %s ESCAPE '\\'")
            params.append(_like_pattern(self.to_address))
        if self.has_attachment is not None:
            clauses.append(f"{alias}.has_attachments = %s")
            params.append(self.has_attachment)
        if self.message_ids:
            clauses.append(f"{alias}.message_id IN ({', '.join(['%s'] * len(self.message_ids))})")
            params.extend(self.message_ids)
        for template, values in self.conditions:
            clauses.append(template.replace("{d}", alias))
            params.extend(values)
        for words in self.exclude_words:
            clause, value = _exclusion(words, alias)
            if clause:
                clauses.append(clause)
                params.append(value)
        return "".join(f" AND {clause}" for clause in clauses), params

    def needs_sql_for_vectors(self) -> bool:
        """Filters that in-memory vector metadata does not carry (resolved to document ids by SQL)."""
        return bool(
            self.folder
            or self.from_address
            or self.to_address
            or self.conditions
            or self.exclude_words
            or self.message_ids is not None
        )


def _exclusion(words: str, alias: str) -> tuple[str, str]:
    """`NOT (document contains these words in this order)` for the current database's full-text index."""
    tokens = fold_tokens(words)
    if not tokens:
        return "", ""
    if connection.vendor == "postgresql":
        return f"NOT ({alias}.tsv @@ to_tsquery('simple', %s))", " <-> ".join(tokens)
    return (
        f"{alias}.id NOT IN (SELECT rowid FROM search_fts WHERE search_fts MATCH %s)",  # noqa: S608 (an alias)
        '"' + " ".join(tokens) + '"',
    )


def _like_pattern(value: str) -> str:
    escaped = value.strip().lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


@dataclass(slots=True)
class SearchHit:
    document_id: int
    score: float
    sources: list[str]
    kind: str = ""
    object_id: int = 0
    message_id: int | None = None  # primary key of the message the document belongs to
    chunk_no: int | None = None
    partial: bool = False  # kept for callers: keyword hits matching some or all words now rank together
    snippet: str = ""


@dataclass(slots=True)
class IndexResult:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    document_ids: list[int] = field(default_factory=list)


@dataclass(slots=True)
class EmbeddingProgress:
    done: int
    total: int
    embedder: str

    @property
    def pending(self) -> int:
        return max(0, self.total - self.done)

    @property
    def percent(self) -> float:
        return 100.0 if not self.total else round(100.0 * self.done / self.total, 1)


DEFAULT_OPTIONS: dict[str, Any] = {
    # Embedding passages: every document is cut into passages of about CHUNK_CHARS (subject and sender in
    # front of each), at most MAX_CHUNKS of them; a document's semantic score is its best passage's.
    "CHUNK_CHARS": 1200,
    "MAX_CHUNKS": 16,
    "EMBED_BATCH": 64,
    # Weighted reciprocal-rank fusion: score = Σ weight / (RRF_K + rank) over the keyword and vector lists,
    # where a keyword hit's weight is KEYWORD_WEIGHT · (its score / the best keyword score)^KEYWORD_SCORE_POWER:
    # a document that shares only a common word with the query adds little. Chosen on the dev questions of
    # bench/data/search_questions.json with all 44,715 Enron mails embedded (96,507 passages): semantic weight
    # 0.3-1.0, power 1/2, k 20/30/60. The earlier 1.0 / k 60 was chosen with only a sample of the mail
    # embedded; on the whole corpus it ranked below the keyword side alone (MRR 0.71 vs 0.74). Dev r@1/r@10/MRR:
    # 1.0/k60 0.65/0.92/0.75, 0.5/k60 0.69/0.88/0.77, 0.7/k30 (chosen; k20 ties) 0.69/0.92/0.79.
    "RRF_K": 30,
    "KEYWORD_WEIGHT": 1.0,
    "KEYWORD_SCORE_POWER": 2.0,
    "SEMANTIC_WEIGHT": 0.7,
    "CANDIDATES": 100,
    # A third list in the fusion: the messages among the first CANDIDATES of the keyword and vector lists,
    # ranked by their gists (apps/search/gist.py: the subject with the opening, and with the continuation, of
    # the text, embedded by multilingual-e5-small; the nearer passage counts), its best GIST_CANDIDATES with
    # weight GIST_WEIGHT (0 leaves it out). It reorders what the words and passages found and adds nothing
    # else. Not for search-as-you-type (its last word is unfinished). Measured through `manage.py search
    # --json` on 239 labelled Enron questions (bench/data/ask_questions*.json and search_questions.json),
    # r@10 / MRR: 0.874 / 0.748 without it; with openings only 0.895 / 0.772; with continuations 0.916 / 0.791
    # at weight 0.5, 0.925 / 0.797 at 0.75 and 0.925 / 0.803 at 1.0, but those two lowered the search
    # questions' own MRR (0.786 -> 0.733 / 0.729), so 0.5 stays. Ranking all COLLECT (300) found instead of
    # 100 (openings only) reached 0.904 / 0.774 at ~3 ms more per search page.
    "GIST_WEIGHT": 0.5,
    "GIST_CANDIDATES": 30,
    # Query words found in more than this share of all documents are left out of the keyword query: bm25
    # gives such words an idf of about zero (exactly zero from one half on), so they cost a long posting
    # list and change no ranking. Derived from the index, so it holds for every language.
    "KEYWORD_MAX_DF": 0.5,
    # Below this many documents ranking every match is cheap, and every typed word keeps its matches.
    "KEYWORD_PRUNE_MIN_DOCUMENTS": 1000,
    # Search pages, the API and the CLI keep a document found only by meaning when its cosine similarity
    # reaches this (universal-sentence-encoder multilingual v3). Measured with bench/search_floor.py on the
    # 50 Enron questions of bench/data/search_questions.json: answers only the semantic side finds sit at
    # 0.24-0.53 (2 of 4 kept at 0.25-0.40 alike), the best hit of a gibberish query at 0.15-0.31 (0 of 50
    # pass 0.35, 3 pass 0.30), of a misspelt question at 0.14-0.49 (6 of 50 pass 0.35).
    "SEMANTIC_FLOOR": 0.35,
    # "Did you mean" looks at words found in at most SUGGEST_MAX_DF documents and proposes a spelling found in
    # SUGGEST_MIN_RATIO times as many.
    "SUGGEST_MAX_DF": 2,
    "SUGGEST_MIN_RATIO": 20,
}

TERM_STATS_SECONDS = 600.0
TERM_STATS_MAX_TERMS = 200_000


@dataclass(slots=True)
class _TermStats:
    """Document frequencies of one database, valid while its newest document id and the clock agree."""

    newest: int = -1
    total: int = 0
    loaded_at: float = 0.0
    frequencies: dict[str, int] = field(default_factory=dict)


_term_stats: dict[str, _TermStats] = {}
_term_stats_lock = threading.Lock()


def forget_term_statistics() -> None:
    """Drop every cached document frequency (tests roll the database back under it)."""
    with _term_stats_lock:
        _term_stats.clear()


class BaseSearchBackend:
    vendor: ClassVar[str] = ""

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        self.options = {**DEFAULT_OPTIONS, **(options or {})}

    # ---------------------------------------------------------------- documents

    def index(self, documents: Sequence[IndexDocument]) -> IndexResult:
        """Insert or update documents (full text now; embeddings are marked pending when text changed)."""
        result = IndexResult()
        if not documents:
            return result
        unique: dict[tuple[str, int], IndexDocument] = {(d.kind, d.object_id): d for d in documents}
        # No savepoint inside a caller's transaction (index_messages indexes a stored batch in one): SQLite's
        # FTS5 flushes its pending terms into a new segment at every savepoint, and segments cost merges.
        with transaction.atomic(savepoint=False):
            existing: dict[tuple[str, int], tuple[int, str]] = {}
            by_kind: dict[str, list[int]] = {}
            for kind, object_id in unique:
                by_kind.setdefault(kind, []).append(object_id)
            for kind, object_ids in by_kind.items():
                for pk, object_id, content_hash in SearchDocument.objects.filter(
                    kind=kind, object_id__in=object_ids
                ).values_list("id", "object_id", "content_hash"):
                    existing[(kind, object_id)] = (pk, content_hash)
            fresh: list[dict[str, Any]] = []
            fresh_docs: list[IndexDocument] = []
            changed: list[SearchDocument] = []
            changed_docs: list[IndexDocument] = []
            unchanged: list[tuple[int, IndexDocument]] = []
            for key, doc in unique.items():
                content_hash = doc.content_hash()
                known = existing.get(key)
                if known is None:
                    fresh.append(self._values(doc, content_hash))
                    fresh_docs.append(doc)
                elif known[1] != content_hash:
                    row = self._row(doc, content_hash)
                    row.pk = known[0]
                    changed.append(row)
                    changed_docs.append(doc)
                else:
                    result.unchanged += 1
                    result.document_ids.append(known[0])
                    unchanged.append((known[0], doc))
            fresh_ids = insert_values(SearchDocument, fresh, batch_size=500)
            if changed:
                SearchDocument.objects.bulk_update(changed, [*UPDATABLE_FIELDS], batch_size=500)
            written = list(zip([*fresh_ids, *(row.pk for row in changed)], fresh_docs + changed_docs, strict=True))
            self._write_fulltext(written, replaced_ids=[row.pk for row in changed])
            self._write_headers(written, unchanged=unchanged, replaced_ids=[row.pk for row in changed])
        result.created = len(fresh)
        result.updated = len(changed)
        result.document_ids.extend(pk for pk, _doc in written)
        return result

    @staticmethod
    def _write_headers(
        written: list[tuple[int, IndexDocument]],
        *,
        unchanged: list[tuple[int, IndexDocument]],
        replaced_ids: list[int],
    ) -> None:
        """The operator fields of the written documents, and of unchanged ones that have none yet."""
        if replaced_ids:
            SearchHeaders.objects.filter(document_id__in=replaced_ids).delete()
        rows = list(written)
        if unchanged:
            have = set(
                SearchHeaders.objects.filter(document_id__in=[pk for pk, _ in unchanged]).values_list(
                    "document_id", flat=True
                )
            )
            rows += [(pk, doc) for pk, doc in unchanged if pk not in have]
        with connection.cursor() as cursor:
            write_header_rows(cursor, [(pk, doc.header_terms()) for pk, doc in rows], quote=connection.ops.quote_name)

    @classmethod
    def _row(cls, doc: IndexDocument, content_hash: str) -> SearchDocument:
        return SearchDocument(**cls._values(doc, content_hash))

    @staticmethod
    def _values(doc: IndexDocument, content_hash: str) -> dict[str, Any]:
        """A document's row as {attname: value}."""
        return dict(
            kind=doc.kind,
            object_id=doc.object_id,
            message_id=doc.message_id,
            account_id=doc.account_id,
            owner_id=doc.owner_id,
            title=doc.title,
            people=doc.people,
            body=doc.body,
            folder=doc.folder[:512],
            date=doc.date,
            from_address=doc.from_address[:320],
            recipients=doc.recipients,
            has_attachments=doc.has_attachments,
            content_hash=content_hash,
            embedded_with="",
        )

    def delete(self, *, kind: str, object_ids: Iterable[int]) -> int:
        """Remove documents from both indexes (chunks cascade; vendor triggers/columns follow)."""
        ids = list(object_ids)
        if not ids:
            return 0
        deleted, _ = SearchDocument.objects.filter(kind=kind, object_id__in=ids).delete()
        return deleted

    # ---------------------------------------------------------------- queries

    def keyword(
        self,
        query: str | ParsedQuery,
        *,
        filters: SearchFilters | None = None,
        limit: int = 20,
        prefix_last: bool = False,
        snippets: bool = True,
    ) -> list[SearchHit]:
        """bm25 over every document matching any informative word of the query, best `limit` first."""
        parsed = query if isinstance(query, ParsedQuery) else parse_query(query, prefix_last=prefix_last)
        filters = filters or SearchFilters()
        if parsed.is_empty or filters.matches_nothing or limit <= 0:
            return []
        informative = self.informative_query(parsed)
        hits = self._keyword_hits(informative, filters, limit)
        return self._finish(hits, informative if snippets else None, with_snippets=snippets)

    def _keyword_hits(self, parsed: ParsedQuery, filters: SearchFilters, limit: int) -> list[SearchHit]:
        return [
            SearchHit(document_id=pk, score=score, sources=["fts"])
            for pk, score in self._keyword_ids(parsed, "any", filters, limit)
        ]

    def informative_query(self, parsed: ParsedQuery) -> ParsedQuery:
        """The query without words found in more than KEYWORD_MAX_DF of all documents (see DEFAULT_OPTIONS).

        When every word is that common ("to be or not to be") the two rarest are kept. Phrases and the
        prefix being typed are always kept."""
        plain = [term for term in parsed.terms if not term.prefix]
        if not plain:
            return parsed
        total, frequencies = self.document_frequencies([v for term in plain for v in term.variants])
        if not total:
            return parsed
        # Nothing is "too common" in a small index.
        prune = total >= int(self.options["KEYWORD_PRUNE_MIN_DOCUMENTS"])

        def frequency(term: QueryTerm) -> int:
            return sum(frequencies.get(variant, 0) for variant in term.variants)

        ceiling = float(self.options["KEYWORD_MAX_DF"]) * total
        kept: list[QueryTerm] = []
        for term in parsed.terms:
            if term.guessed and not term.prefix:
                # "guests" read as "gusts", "Mueller" as "Muller": keep the guess only where the index
                # uses that spelling at least as often as the typed one.
                typed, *guesses = term.variants
                frequent = [g for g in guesses if frequencies.get(g, 0) >= frequencies.get(typed, 0)]
                term = QueryTerm((typed, *frequent), prefix=False, guessed=bool(frequent))
            if term.prefix or not prune or frequency(term) <= ceiling:
                kept.append(term)
        if not any(not term.prefix for term in kept) and not parsed.phrases:
            kept += sorted(plain, key=frequency)[:2]
        return ParsedQuery(text=parsed.text, terms=kept, phrases=parsed.phrases)

    def document_frequencies(self, words: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(documents in the index, {word: documents containing it}) for folded words; cached per process
        until a document is added or TERM_STATS_SECONDS pass."""
        key = f"{connection.alias}:{connection.settings_dict['NAME']}"
        newest = self._newest_document_id()
        now = time.monotonic()
        with _term_stats_lock:
            stats = _term_stats.get(key)
            if (
                stats is None
                or stats.newest != newest
                or now - stats.loaded_at > TERM_STATS_SECONDS
                or len(stats.frequencies) > TERM_STATS_MAX_TERMS
            ):
                stats = _term_stats[key] = _TermStats(newest=newest, loaded_at=now)
                stats.total = -1
            missing = [word for word in dict.fromkeys(words) if word not in stats.frequencies]
            known_total = stats.total
        counted = self._term_document_counts(missing) if missing else {}
        total = self._document_count() if known_total < 0 else known_total
        with _term_stats_lock:
            stats.frequencies.update({word: counted.get(word, 0) for word in missing})
            stats.total = total
            return total, {word: stats.frequencies.get(word, 0) for word in words}

    def semantic(
        self,
        query: str,
        *,
        filters: SearchFilters | None = None,
        limit: int = 20,
        embedder: Embedder | None = None,
        snippets: bool = True,
    ) -> list[SearchHit]:
        """Cosine similarity between the query and document chunks (best chunk per document)."""
        filters = filters or SearchFilters()
        hits = self._semantic_hits(query, filters, limit, embedder)
        parsed = parse_query(query) if snippets else None
        return self._finish(hits, parsed, with_snippets=snippets)

    def similarities(
        self, query: str, *, filters: SearchFilters, limit: int, embedder: Embedder | None = None
    ) -> list[SearchHit]:
        """The exact cosine similarity of the query to every document passing `filters` (each at its best
        chunk), best `limit` first, without snippets. For a few dozen documents a reranker already holds (the
        filters name them), not for searching: no approximate index is used, so nothing is missed."""
        hits = self._semantic_hits(query, filters, limit, embedder, exact=True)
        return self._finish(hits, None, with_snippets=False)

    def _semantic_hits(
        self, query: str, filters: SearchFilters, limit: int, embedder: Embedder | None, *, exact: bool = False
    ) -> list[SearchHit]:
        """The ranked semantic hits without their references (see _finish)."""
        if not (query or "").strip() or filters.matches_nothing or limit <= 0:
            return []
        embedder = embedder or get_embedder()
        state_embedder, dimension = self._vectors_embedder()
        if state_embedder != embedder.key or not dimension:
            return []  # nothing has been embedded with this model yet
        vector = embed_query_cached(embedder, query[:2000])
        return [
            SearchHit(document_id=pk, score=float(score), sources=["vector"], chunk_no=chunk_no)
            for pk, chunk_no, score in self._vector_ids(vector, filters, limit, dimension, exact=exact)
        ]

    def _gist_ranked(self, query: str, lists: Sequence[Sequence[SearchHit]], limit: int) -> list[SearchHit]:
        """The messages among the first CANDIDATES of each of the other lists, ranked by how near their gists
        (apps/search/gist.py: the subject with the opening or the continuation of the text, whichever is
        nearer; multilingual-e5-small) are to the query: the best `limit`, scored by that similarity. Empty
        while the gist model is off or none of them has a gist yet."""
        from apps.search.gist import get_gist_embedder, message_similarities

        depth = int(self.options["CANDIDATES"])
        found = list(dict.fromkeys(hit.document_id for hits in lists for hit in hits[:depth]))
        embedder = get_gist_embedder() if found and (query or "").strip() else None
        if embedder is None:
            return []
        kind = DocumentKind.MESSAGE.value
        messages = {
            document: row["message_id"]
            for document, row in self._document_refs(found).items()
            if row["kind"] == kind and row["message_id"] is not None
        }
        similarity = message_similarities(embedder, query, messages.values())
        ranked = sorted(
            (
                (score, document)
                for document, message in messages.items()
                if (score := similarity.get(message)) is not None
            ),
            key=lambda pair: (-pair[0], -pair[1]),
        )
        return [SearchHit(document_id=document, score=score, sources=["gist"]) for score, document in ranked[:limit]]

    def hybrid(
        self,
        query: str,
        *,
        filters: SearchFilters | None = None,
        limit: int = 20,
        prefix_last: bool = False,
        embedder: Embedder | None = None,
        snippets: bool = True,
        semantic_floor: float | None = None,
        gist: bool = True,
    ) -> list[SearchHit]:
        """Keyword and semantic candidates, and the messages among them ranked by their gists (unless `gist` is
        False or the query is typed as you go), fused by weighted reciprocal rank (KEYWORD_WEIGHT,
        SEMANTIC_WEIGHT, GIST_WEIGHT).

        With `semantic_floor`, a document found only by meaning is kept only when its similarity reaches the
        floor (see SEMANTIC_FLOOR): the list is not padded with mail that merely resembles the query."""
        filters = filters or SearchFilters()
        parsed = parse_query(query, prefix_last=prefix_last)
        candidates = max(limit, int(self.options["CANDIDATES"]))
        # Unfinished: the fused list gets its references once, below.
        semantic_hits = self._semantic_hits(query, filters, candidates, embedder)
        informative = parsed if parsed.is_empty else self.informative_query(parsed)
        keyword_hits = (
            [] if parsed.is_empty or filters.matches_nothing else self._keyword_hits(informative, filters, candidates)
        )
        gist_weight = float(self.options["GIST_WEIGHT"])
        gist_hits = (
            self._gist_ranked(query, [keyword_hits, semantic_hits], int(self.options["GIST_CANDIDATES"]))
            if gist and gist_weight > 0 and not prefix_last
            else []
        )
        keyword_weight = float(self.options["KEYWORD_WEIGHT"])
        semantic_weight = float(self.options["SEMANTIC_WEIGHT"])
        power = float(self.options["KEYWORD_SCORE_POWER"])
        best = max((hit.score for hit in keyword_hits), default=0.0)

        def keyword_hit_weight(hit: SearchHit) -> float:
            return keyword_weight * (max(hit.score, 0.0) / best) ** power if best > 0 else keyword_weight

        fused = self.fuse(
            [
                (keyword_hits, keyword_hit_weight),
                (semantic_hits, lambda hit: semantic_weight),
                (gist_hits, lambda hit: gist_weight),
            ],
            limit=len(keyword_hits) + len(semantic_hits) if semantic_floor is not None else limit,
        )
        if semantic_floor is not None:
            similarity = {hit.document_id: hit.score for hit in semantic_hits}
            fused = [
                hit for hit in fused if "fts" in hit.sources or similarity.get(hit.document_id, 0.0) >= semantic_floor
            ][:limit]
        return self._finish(fused, informative, with_snippets=snippets)

    def keyword_count(self, query: str, *, filters: SearchFilters | None = None) -> int:
        """How many messages (an attachment's text counts for its message) and other documents the keyword
        side matches: every match, not only the ranked page."""
        parsed = parse_query(query)
        filters = filters or SearchFilters()
        if parsed.is_empty or filters.matches_nothing:
            return 0
        return self._keyword_count(self.informative_query(parsed), filters)

    def browse(self, *, filters: SearchFilters, limit: int, offset: int = 0) -> tuple[list[SearchHit], int]:
        """Documents passing `filters`, newest first, and how many messages and files that is (a query of
        operators only)."""
        if filters.matches_nothing:
            return [], 0
        where, params = filters.sql("d")
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT count(DISTINCT COALESCE(d.message_id, -d.id)) FROM search_document d WHERE 1 = 1{where}",  # noqa: S608
                params,
            )
            total = int(cursor.fetchone()[0])
            cursor.execute(
                f"SELECT d.id FROM search_document d WHERE 1 = 1{where}"  # noqa: S608
                " ORDER BY d.date DESC, d.id DESC LIMIT %s OFFSET %s",
                [*params, limit, offset],
            )
            hits = [SearchHit(document_id=row[0], score=0.0, sources=[]) for row in cursor.fetchall()]
        return self._finish(hits, None, with_snippets=False), total

    def snippets(self, hits: list[SearchHit], query: str, *, prefix_last: bool = False) -> list[SearchHit]:
        """Fill in the highlighted snippets of `hits` (ranked without them) for `query`."""
        parsed = parse_query(query, prefix_last=prefix_last) if query.strip() else None
        return self._finish(hits, parsed, with_snippets=True)

    def suggest(self, words: Sequence[str]) -> dict[str, str]:
        """ "Did you mean": for each folded word the index does not (or hardly) contain, the indexed word
        closest in spelling (Damerau-Levenshtein; at most 1 edit for words up to 4 letters, else 2) that
        starts with the same letter (Lucene's DirectSpellChecker minPrefix), most documents first."""
        from rapidfuzz.distance import OSA

        candidates = [w for w in dict.fromkeys(words) if len(w) >= 3 and not w.isdigit()]
        if not candidates:
            return {}
        _total, frequencies = self.document_frequencies(candidates)
        suggestions: dict[str, str] = {}
        for word in candidates:
            seen = frequencies.get(word, 0)
            if seen > int(self.options["SUGGEST_MAX_DF"]):
                continue
            max_edits = 1 if len(word) <= 4 else 2
            best: tuple[int, int, str] | None = None
            for term, documents in self._vocabulary(word[0], len(word) - max_edits, len(word) + max_edits):
                if term == word or documents < max(1, seen * int(self.options["SUGGEST_MIN_RATIO"])):
                    continue
                distance = OSA.distance(word, term, score_cutoff=max_edits)
                if distance > max_edits:
                    continue
                key = (distance, -documents, term)
                if best is None or key < best:
                    best = key
            if best is not None:
                suggestions[word] = best[2]
        return suggestions

    def search(self, query: str, *, mode: Mode = "hybrid", **kwargs: Any) -> list[SearchHit]:
        if mode == "keyword":
            kwargs.pop("embedder", None)
            return self.keyword(query, **kwargs)
        if mode == "semantic":
            kwargs.pop("prefix_last", None)
            return self.semantic(query, **kwargs)
        return self.hybrid(query, **kwargs)

    def fuse(
        self, ranked_lists: Sequence[tuple[Sequence[SearchHit], Callable[[SearchHit], float]]], *, limit: int
    ) -> list[SearchHit]:
        """Reciprocal-rank fusion: score = Σ weight / (k + rank); sources record which lists found it."""
        k = float(self.options["RRF_K"])
        merged: dict[int, SearchHit] = {}
        for hits, weight in ranked_lists:
            for rank, hit in enumerate(hits, start=1):
                contribution = weight(hit) / (k + rank)
                current = merged.get(hit.document_id)
                if current is None:
                    merged[hit.document_id] = SearchHit(
                        hit.document_id, contribution, list(hit.sources), chunk_no=hit.chunk_no, partial=hit.partial
                    )
                else:
                    current.score += contribution
                    for source in hit.sources:
                        if source not in current.sources:
                            current.sources.append(source)
                    if current.chunk_no is None:
                        current.chunk_no = hit.chunk_no
        fused = sorted(merged.values(), key=lambda hit: (-hit.score, -hit.document_id))
        return fused[:limit]

    def _finish(self, hits: list[SearchHit], parsed: ParsedQuery | None, *, with_snippets: bool) -> list[SearchHit]:
        """Attach kind/object/message ids (and snippets) to the final page of hits in one query."""
        if not hits:
            return hits
        ids = [h.document_id for h in hits]
        if with_snippets:
            documents = SearchDocument.objects.filter(pk__in=ids).annotate(head=Substr("body", 1, SNIPPET_SCAN_CHARS))
            fields = ("id", "kind", "object_id", "message_id", "title", "head")
            rows = {row["id"]: row for row in documents.values(*fields)}
        else:
            rows = self._document_refs(ids)
        finished: list[SearchHit] = []
        for hit in hits:
            row = rows.get(hit.document_id)
            if row is None:
                continue  # deleted while we were ranking
            hit.kind, hit.object_id, hit.message_id = row["kind"], row["object_id"], row["message_id"]
            if with_snippets:
                hit.snippet = highlight(row["head"] or row["title"] or "", parsed)
            finished.append(hit)
        return finished

    def _document_refs(self, ids: list[int]) -> dict[int, dict[str, Any]]:
        """{document id: {"kind", "object_id", "message_id"}} for ranked hits."""
        rows = SearchDocument.objects.filter(pk__in=ids).values("id", "kind", "object_id", "message_id")
        return {row["id"]: dict(row) for row in rows}

    # ---------------------------------------------------------------- embeddings

    def _vectors_embedder(self) -> tuple[str, int]:
        """(embedder key, dimension) of the stored vectors: one small read per semantic query (raw SQL; the ORM's
        get_or_create cost more than the read)."""
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT embedder, dimension FROM {connection.ops.quote_name(SearchIndexState._meta.db_table)}"  # noqa: S608
                " WHERE id = 1"
            )
            row = cursor.fetchone()
        if row is None:
            state = self.state()
            return state.embedder, state.dimension
        return str(row[0] or ""), int(row[1] or 0)

    def state(self) -> SearchIndexState:
        state, _ = SearchIndexState.objects.get_or_create(pk=1)
        return state

    def ensure_embedder(self, embedder: Embedder) -> bool:
        """Switching embedders invalidates every vector: drop them and mark all documents pending."""
        state = self.state()
        if state.embedder == embedder.key and state.dimension == embedder.dimension:
            return False
        logger.info("search: embedder changed (%r -> %r), re-embedding everything", state.embedder, embedder.key)
        with transaction.atomic():
            SearchChunk.objects.all().delete()
            SearchDocument.objects.exclude(embedded_with="").update(embedded_with="")
            SearchIndexState.objects.filter(pk=1).update(embedder=embedder.key, dimension=embedder.dimension)
            self._on_embedder_changed(embedder.dimension)
        return True

    def embedding_progress(self, embedder_key: str | None = None) -> EmbeddingProgress:
        key = embedder_key if embedder_key is not None else self.state().embedder
        total = SearchDocument.objects.count()
        done = SearchDocument.objects.filter(embedded_with=key).count() if key else 0
        return EmbeddingProgress(done=done, total=total, embedder=key)

    def has_pending_embeddings(self) -> bool:
        return SearchDocument.objects.filter(embedded_with="").exists()

    def embed_pending(
        self,
        *,
        embedder: Embedder | None = None,
        batch_size: int | None = None,
        max_documents: int | None = None,
        deadline: float | None = None,
        progress: Callable[[int], object] | None = None,
    ) -> int:
        """Embed documents waiting for vectors, oldest first, one committed batch at a time (resumable).

        The model runs outside any transaction; the write re-checks each document's content hash so
        a document re-indexed meanwhile stays pending instead of getting stale vectors."""
        embedder = embedder or get_embedder()
        self.ensure_embedder(embedder)
        size = max(1, int(batch_size or self.options["EMBED_BATCH"]))
        chunk_chars = int(self.options["CHUNK_CHARS"])
        max_chunks = int(self.options["MAX_CHUNKS"])
        done = 0
        while True:
            take = size if max_documents is None else min(size, max_documents - done)
            if take <= 0:
                break
            batch = list(
                SearchDocument.objects.filter(embedded_with="")
                .order_by("id")
                .values("id", "title", "people", "body", "content_hash")[:take]
            )
            if not batch:
                break
            texts: list[str] = []
            owners: list[tuple[int, int]] = []
            for row in batch:
                for chunk_no, text in enumerate(
                    chunk_texts(row["title"], row["people"], row["body"], size=chunk_chars, limit=max_chunks)
                ):
                    texts.append(text)
                    owners.append((row["id"], chunk_no))
            vectors = embedder.embed_documents(texts)
            self._store_vectors(batch, owners, texts, vectors, embedder.key)
            done += len(batch)
            if progress is not None:
                progress(len(batch))
            if deadline is not None and time.monotonic() >= deadline:
                break
        return done

    def _store_vectors(
        self,
        batch: Sequence[Mapping[str, Any]],
        owners: list[tuple[int, int]],
        texts: list[str],
        vectors: np.ndarray,
        embedder_key: str,
    ) -> None:
        expected = {row["id"]: row["content_hash"] for row in batch}
        with transaction.atomic():
            current = dict(
                SearchDocument.objects.select_for_update()
                .filter(pk__in=list(expected), embedded_with="")
                .values_list("id", "content_hash")
            )
            valid = {pk for pk, content_hash in current.items() if expected.get(pk) == content_hash}
            if not valid:
                return
            SearchChunk.objects.filter(document_id__in=valid).delete()
            SearchChunk.objects.bulk_create(
                [
                    SearchChunk(document_id=pk, chunk_no=chunk_no, text=text, embedding=vector)
                    for (pk, chunk_no), text, vector in zip(owners, texts, vectors, strict=True)
                    if pk in valid
                ],
                batch_size=500,
            )
            SearchDocument.objects.filter(pk__in=valid).update(embedded_with=embedder_key)

    # ---------------------------------------------------------------- vendor hooks

    def _write_fulltext(self, written: list[tuple[int, IndexDocument]], *, replaced_ids: list[int]) -> None:
        raise NotImplementedError

    def _keyword_ids(
        self, parsed: ParsedQuery, match: KeywordMatch, filters: SearchFilters, limit: int
    ) -> list[tuple[int, float]]:
        raise NotImplementedError

    def _vector_ids(
        self, vector: np.ndarray, filters: SearchFilters, limit: int, dimension: int, *, exact: bool = False
    ) -> list[tuple[int, int, float]]:
        """(document id, best chunk, cosine) of the best `limit` documents; `exact` scores every chunk of the
        documents passing the filters (no prefilter, no approximate index)."""
        raise NotImplementedError

    def _newest_document_id(self) -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT max(id) FROM search_document")
            row = cursor.fetchone()
        return int(row[0] or 0) if row else 0

    def _document_count(self) -> int:
        return SearchDocument.objects.count()

    def _term_document_counts(self, words: Sequence[str]) -> dict[str, int]:
        """How many documents contain each folded word (full-text index)."""
        raise NotImplementedError

    def _keyword_count(self, parsed: ParsedQuery, filters: SearchFilters) -> int:
        raise NotImplementedError

    def _vocabulary(self, first: str, shortest: int, longest: int) -> list[tuple[str, int]]:
        """Indexed words starting with `first` of that length range, with their document counts."""
        raise NotImplementedError

    def refresh_vocabulary(self, *, force: bool = False) -> bool:
        """Vendor work to bring the word list behind `suggest` up to date (PostgreSQL); True when done."""
        return False

    def _on_embedder_changed(self, dimension: int) -> None:
        """Vendor work when the vector dimension may have changed (PostgreSQL rebuilds its HNSW index)."""

    def rebuild_fulltext(self, progress: Callable[[int], object] | None = None) -> int:
        raise NotImplementedError

    def check(self) -> list[CheckMessage]:
        return []


UPDATABLE_FIELDS = (
    "message",
    "account",
    "owner",
    "title",
    "people",
    "body",
    "folder",
    "date",
    "from_address",
    "recipients",
    "has_attachments",
    "content_hash",
    "embedded_with",
)
