"""The search steps of an Ask run: local keyword variants, the semantic index, provider-native search,
lazy attachment text, and reading the shortlisted messages. Reads only, except through actions (attachment
text is cached on the Attachment row and indexed)."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from apps.accounts.models import Attachment, MailAccount, Message, Provider, Thread
from apps.accounts.selectors import copy_keys
from apps.ask import rerank
from apps.ask.extraction import attachment_kind
from apps.ask.planner import Plan
from apps.ask.rerank import AttachmentText, Candidate
from apps.search import actions as search_actions
from apps.search.backends import get_search_backend
from apps.search.backends.base import SearchFilters, SearchHit
from apps.search.documents import message_body_text
from apps.search.folding import fold_tokens
from apps.search.gist import get_gist_embedder, message_documents, nearest_messages
from apps.search.gist import similarity as gist_similarity
from apps.search.models import DocumentKind

logger = logging.getLogger(__name__)

KEYWORD_LIMIT = 30
SEMANTIC_LIMIT = 40
HYBRID_LIMIT = 30
HIT_SOURCES = {"fts": "local_fts", "vector": "local_vector"}  # a hybrid hit's lists, as Ask's source names
PROVIDER_LIMIT = 20
SHORTLIST = 30
MAX_ATTACHMENTS_PER_RUN = 12
MAX_ATTACHMENT_BYTES = 15 * 1024 * 1024
MESSAGE_KINDS = (DocumentKind.MESSAGE.value, DocumentKind.ATTACHMENT.value)


class SearchableProvider(Protocol):
    def search(self, query: str, limit: int = 20) -> list[str]: ...

    def close(self) -> None: ...


@dataclass(slots=True)
class CandidatePool:
    by_message: dict[int, Candidate] = field(default_factory=dict)
    keyword_lists: int = 0
    semantic_total: int = 0
    collapsed: bool = False

    def get(self, message_pk: int) -> Candidate:
        candidate = self.by_message.get(message_pk)
        if candidate is None:
            candidate = Candidate(message_pk=message_pk)
            self.by_message[message_pk] = candidate
        return candidate

    def shortlist(self, size: int | None = None) -> list[Candidate]:
        size = size or SHORTLIST  # read at call time: bench/ask_weights.py --shortlist measures other sizes
        self.collapse_copies()
        ordered = sorted(
            self.by_message.values(),
            key=lambda c: (-c.preliminary_score(self.keyword_lists, self.semantic_total), -c.message_pk),
        )
        # The nearest by gist first: a mail that says in other words what the question describes has little
        # of the index ranks the preliminary score counts.
        by_gist = sorted((c for c in ordered if c.gist_rank is not None), key=lambda c: c.gist_rank or 0)
        first = by_gist[: min(size, rerank.GIST_SHORTLIST_HOLD)]
        chosen = {c.message_pk for c in first}
        return first + [c for c in ordered if c.message_pk not in chosen][: size - len(first)]

    def collapse_copies(self) -> int:
        """One candidate per mail: copies of one message (the same mail delivered to several folders or
        mailboxes, or imported twice: same sender, subject, date and text, spacing aside) become one candidate, the
        one the indexes ranked best, holding the best rank and score each list gave any copy; the lists'
        ranks are then counted over distinct mails. Without this, three copies of one mail took three of the
        ten evidence rows and three of the thirty shortlist places. Returns how many copies were folded."""
        if self.collapsed or len(self.by_message) < 2:
            self.collapsed = True
            return 0
        self.collapsed = True
        groups: dict[tuple[Any, ...], list[Candidate]] = {}
        for pk, key in copy_keys(list(self.by_message)).items():
            groups.setdefault(key, []).append(self.by_message[pk])
        folded = 0
        for copies in groups.values():
            if len(copies) < 2:
                continue
            copies.sort(key=lambda c: (-c.preliminary_score(self.keyword_lists, self.semantic_total), c.message_pk))
            kept = copies[0]
            for copy in copies[1:]:
                _absorb(kept, copy)
                del self.by_message[copy.message_pk]
                folded += 1
        if folded:
            for attribute in ("keyword_rank", "semantic_rank", "hybrid_rank", "gist_rank"):
                _dense_ranks(list(self.by_message.values()), attribute)
        return folded


def _absorb(kept: Candidate, copy: Candidate) -> None:
    """`kept` stands for `copy` too: the better of each list's rank and score, every source. (The copy's
    attachment hits name its own attachment rows, so they stay with it.)"""
    for attribute in ("keyword_rank", "semantic_rank", "hybrid_rank", "gist_rank"):
        mine, theirs = getattr(kept, attribute), getattr(copy, attribute)
        if theirs is not None and (mine is None or theirs < mine):
            setattr(kept, attribute, theirs)
    for attribute in ("keyword_score", "gist_score"):
        mine, theirs = getattr(kept, attribute), getattr(copy, attribute)
        if theirs is not None and (mine is None or theirs > mine):
            setattr(kept, attribute, theirs)
    kept.semantic_score = max(kept.semantic_score, copy.semantic_score)
    kept.keyword_lists = max(kept.keyword_lists, copy.keyword_lists)
    kept.provider = kept.provider or copy.provider
    kept.sources |= copy.sources
    kept.copies += 1 + copy.copies


def _dense_ranks(candidates: list[Candidate], attribute: str) -> None:
    """Renumber one list's ranks 1, 2, 3 … in their order (the folded copies left gaps)."""
    ranked = sorted((c for c in candidates if getattr(c, attribute) is not None), key=lambda c: getattr(c, attribute))
    for rank, candidate in enumerate(ranked, start=1):
        setattr(candidate, attribute, rank)


def search_filters(plan: Plan, account_ids: tuple[int, ...], *, thread_id: int | None = None) -> SearchFilters:
    conditions: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    if thread_id is not None:
        messages = Message._meta.db_table
        conditions = (
            (f"{{d}}.message_id IN (SELECT m.id FROM {messages} m WHERE m.thread_id = %s)", (thread_id,)),  # noqa: S608
        )
    return SearchFilters(
        account_ids=account_ids,
        kinds=MESSAGE_KINDS,
        date_from=plan.search_range.start,
        date_to=plan.search_range.end,
        conditions=conditions,
    )


THREAD_LIMIT = SHORTLIST


def thread_scope(pool: CandidatePool, thread_id: int, account_ids: tuple[int, ...]) -> dict[str, Any]:
    """ "Ask about this thread": every message of the thread is a candidate (the searches only rank them, and
    find nothing outside it); its subject and size for the "Answering from the thread …" line."""
    thread = Thread.objects.filter(pk=thread_id, account_id__in=account_ids).only("subject").first()
    ids = list(
        Message.objects.filter(thread_id=thread_id, account_id__in=account_ids)
        .order_by("-date", "-pk")
        .values_list("pk", flat=True)[:THREAD_LIMIT]
    )
    for message_pk in ids:
        pool.get(message_pk)
    total = Message.objects.filter(thread_id=thread_id, account_id__in=account_ids).count()
    return {"id": thread_id, "subject": thread.subject if thread else "", "messages": total, "read": len(ids)}


def keyword_search(plan: Plan, pool: CandidatePool, filters: SearchFilters) -> dict[str, Any]:
    """Every keyword variant; a message's best rank over the variants counts, and how many found it."""
    backend = get_search_backend()
    found = 0
    for query in plan.keyword_queries:
        hits = backend.keyword(query, filters=filters, limit=KEYWORD_LIMIT, snippets=False)
        pool.keyword_lists += 1
        seen: set[int] = set()
        rank = 0
        best = max((hit.score for hit in hits), default=0.0)
        for hit in hits:
            if hit.message_id is None or hit.message_id in seen:
                continue
            seen.add(hit.message_id)
            rank += 1
            candidate = pool.get(hit.message_id)
            candidate.sources.add("local_fts")
            candidate.keyword_lists += 1
            if candidate.keyword_rank is None or rank < candidate.keyword_rank:
                candidate.keyword_rank = rank
            relative = max(0.0, hit.score) / best if best > 0 else 0.0
            candidate.keyword_score = max(candidate.keyword_score or 0.0, relative)
            if hit.kind == DocumentKind.ATTACHMENT:
                candidate.hit_attachment_ids.add(hit.object_id)
        found += len(seen)
    return {"queries": len(plan.keyword_queries), "hits": found}


def word_rarity(words: list[str]) -> dict[str, float]:
    """Each word's idf in the search index, from the index's own document counts (a word in most mail
    says little about which mail answers): log(1 + (N - n + 0.5) / (n + 0.5)), n for its rarest token."""
    backend = get_search_backend()
    tokens = {word: fold_tokens(word) for word in words}
    total, frequencies = backend.document_frequencies([t for parts in tokens.values() for t in parts])
    if not total:
        return {}
    rarity: dict[str, float] = {}
    for word, parts in tokens.items():
        if parts:
            count = min(frequencies.get(token, 0) for token in parts)
            rarity[word] = math.log(1 + (total - count + 0.5) / (count + 0.5))
    return rarity


def _per_message(hits: list[SearchHit], pool: CandidatePool) -> Iterator[tuple[int, SearchHit, Candidate]]:
    """Each message's first hit with its rank among messages, and its candidate (an attachment's hit stands
    for its message and marks the attachment)."""
    seen: set[int] = set()
    for hit in hits:
        if hit.message_id is None or hit.message_id in seen:
            continue
        seen.add(hit.message_id)
        candidate = pool.get(hit.message_id)
        if hit.kind == DocumentKind.ATTACHMENT:
            candidate.hit_attachment_ids.add(hit.object_id)
        yield len(seen), hit, candidate


def semantic_search(plan: Plan, pool: CandidatePool, filters: SearchFilters) -> dict[str, Any]:
    backend = get_search_backend()
    state = backend.state()
    if not state.embedder:
        return {"hits": 0, "note": "no embeddings yet (the backfill has not run)"}
    hits = backend.semantic(plan.semantic_query, filters=filters, limit=SEMANTIC_LIMIT, snippets=False)
    rank = 0
    for rank, hit, candidate in _per_message(hits, pool):
        candidate.sources.add("local_vector")
        candidate.semantic_rank = rank
        candidate.semantic_score = max(candidate.semantic_score, hit.score)
    pool.semantic_total = rank
    return {"hits": rank}


def shortlist_similarities(plan: Plan, shortlist: list[Candidate]) -> int:
    """The question's exact similarity to every shortlisted message (its best chunk, an attachment's counting
    for its message), so a mail found by its words has a semantic score too: the semantic search only scores
    its own top SEMANTIC_LIMIT, and a mail outside them would otherwise count as not similar at all.
    Returns how many messages were scored (none before the embedding backfill: the search finds no vectors)."""
    if not shortlist:
        return 0
    ids = tuple(candidate.message_pk for candidate in shortlist)
    # The ids are this run's own candidates, found with the user's filters: naming them is enough.
    scoped = SearchFilters(message_ids=ids)
    by_pk = {candidate.message_pk: candidate for candidate in shortlist}
    scored: set[int] = set()
    for hit in get_search_backend().similarities(plan.semantic_query, filters=scoped, limit=4 * len(ids)):
        candidate = by_pk.get(hit.message_id) if hit.message_id is not None else None
        if candidate is not None:
            candidate.semantic_score = max(candidate.semantic_score, hit.score)
            scored.add(candidate.message_pk)
    return len(scored)


# Gists missing for at most this many candidates are embedded during the run (~50 ms each); with more missing
# (the backfill has not reached them) the gist signal is left out of this run rather than compared unevenly.
GIST_ON_DEMAND = 6


GIST_LIMIT = 20


def gist_search(plan: Plan, pool: CandidatePool, filters: SearchFilters) -> int:
    """Add the GIST_LIMIT mails of the user's accounts (and the plan's period) whose gists are nearest to the
    question to the candidates; returns how many were new. Not for a one-thread question (its candidates
    are that thread) or other filters the gist matrix cannot apply."""
    embedder = get_gist_embedder()
    if embedder is None or not filters.account_ids or filters.conditions or filters.message_ids is not None:
        return 0
    before = len(pool.by_message)
    nearest = nearest_messages(
        embedder,
        plan.semantic_query or plan.question,
        account_ids=filters.account_ids,
        date_from=filters.date_from,
        date_to=filters.date_to,
        limit=GIST_LIMIT,
    )
    # The matrix may still hold a row of mail deleted since it was loaded: only the user's own messages.
    own = set(
        Message.objects.filter(pk__in=[pk for pk, _ in nearest], account_id__in=filters.account_ids).values_list(
            "pk", flat=True
        )
    )
    for message_pk, _score in nearest:
        if message_pk in own:
            pool.get(message_pk).sources.add("local_vector")
    return len(pool.by_message) - before


def pool_gists(plan: Plan, pool: CandidatePool) -> int:
    """Similarity of the question to the gist (apps/search/gist.py) of every candidate found so far, before the
    shortlist is cut: its rank among them counts in the shortlist's order, so a mail the words ranked low but
    that is about what the question describes is read and reranked. Returns how many were scored: all of
    them, or none when the gist model is off or too many gists are missing."""
    embedder = get_gist_embedder()
    candidates = list(pool.by_message.values())
    if embedder is None or not candidates:
        return 0
    documents = message_documents(candidate.message_pk for candidate in candidates)
    vectors = search_actions.gists_for(list(documents.values()), embedder, compute_missing=GIST_ON_DEMAND)
    if len(vectors) < len(documents):
        return 0
    scores = gist_similarity(embedder, plan.semantic_query or plan.question, vectors)
    scored = [c for c in candidates if c.message_pk in documents and documents[c.message_pk]["id"] in scores]
    for candidate in scored:
        candidate.gist_score = scores[documents[candidate.message_pk]["id"]]
    for rank, candidate in enumerate(sorted(scored, key=lambda c: -(c.gist_score or 0.0)), start=1):
        candidate.gist_rank = rank
    return len(scored)


def hybrid_search(plan: Plan, pool: CandidatePool, filters: SearchFilters) -> dict[str, Any]:
    """The search page's own ranking of the question: bm25 over its informative words fused with the semantic
    index and with its gist list (apps/search). Each message's rank in it is a signal of the rerank, and its
    top messages join the candidates. The gist list was left out while gists were openings only (it measured
    lower then: bench/ask.py r@10 / MRR 0.894 / 0.788 with it, 0.905 / 0.792 without); with continuations it
    measured higher (bench/ask_weights.py over 239 questions: 0.912 / 0.809 without it, 0.937 / 0.833 with
    it, five of six files higher)."""
    backend = get_search_backend()
    hits = backend.hybrid(plan.semantic_query, filters=filters, limit=HYBRID_LIMIT, snippets=False)
    before = set(pool.by_message)
    rank = 0
    for rank, hit, candidate in _per_message(hits, pool):
        candidate.hybrid_rank = rank
        candidate.sources.update(HIT_SOURCES[source] for source in hit.sources if source in HIT_SOURCES)
    return {"hits": rank, "new": len(set(pool.by_message) - before)}


def provider_search(plan: Plan, pool: CandidatePool, accounts: list[MailAccount]) -> dict[str, Any]:
    """Gmail and Outlook accounts are asked too (best effort: a failure is recorded, never fatal)."""
    from apps.accounts.providers import get_provider

    report: dict[str, Any] = {}
    for account in accounts:
        if account.provider not in (Provider.GMAIL, Provider.OUTLOOK) or not account.enabled:
            continue
        kind = "gmail" if account.provider == Provider.GMAIL else "graph"
        query = plan.provider_queries.get(kind, "")
        entry: dict[str, Any] = {"provider": account.provider, "query": query}
        report[account.name] = entry
        if not query:
            entry["status"] = "skipped"
            continue
        provider: Any = get_provider(account)
        try:
            searcher: SearchableProvider = provider
            ids = searcher.search(query, PROVIDER_LIMIT)
        except Exception as exc:  # best effort: any provider failure is reported, local results stand
            category = getattr(exc, "category", "other")
            logger.info("ask: provider search on %s failed: %s", account.name, exc)
            entry.update(status="error", error=str(exc)[:500], category=category)
            continue
        finally:
            try:
                provider.close()
            except Exception:  # closing is best effort
                logger.debug("closing provider failed", exc_info=True)
        local = dict(Message.objects.filter(account=account, provider_id__in=ids).values_list("provider_id", "id"))
        for provider_id in ids:
            message_pk = local.get(provider_id)
            if message_pk is None:
                continue
            candidate = pool.get(message_pk)
            candidate.provider = True
            candidate.sources.add("provider_search")
        entry.update(status="ok", results=len(ids), not_synced=len([i for i in ids if i not in local]))
    return report


def pending_attachments(candidates: list[Candidate]) -> list[Attachment]:
    """Readable attachments of the candidates whose text was never extracted."""
    if not candidates:
        return []
    rows = (
        Attachment.objects.filter(
            message_id__in=[c.message_pk for c in candidates],
            text_extracted_at__isnull=True,
            is_inline=False,
            size__lte=MAX_ATTACHMENT_BYTES,
        )
        .select_related("message__account")
        .order_by("message_id", "pk")
    )
    order = {c.message_pk: index for index, c in enumerate(candidates)}
    readable = [a for a in rows if attachment_kind(a.filename, a.mime_type) is not None]
    readable.sort(key=lambda a: (order.get(a.message_id, 0), a.pk))
    return readable[:MAX_ATTACHMENTS_PER_RUN]


MESSAGE_FIELDS = (
    "id",
    "thread_id",
    "message_id",
    "dedupe_key",
    "subject",
    "from_name",
    "from_address",
    "date",
    "body_text",
    "body_html",
    "snippet",
    "thread__subject",
)


def load_candidates(candidates: list[Candidate]) -> None:
    """Read the subject, sender, date, body and attachment texts of the shortlist (two queries)."""
    wanted = {c.message_pk: c for c in candidates}
    if not wanted:
        return
    for message in Message.objects.filter(pk__in=list(wanted)).select_related("thread").only(*MESSAGE_FIELDS):
        candidate = wanted[message.pk]
        candidate.thread_id = message.thread_id
        candidate.thread_subject = message.thread.subject if message.thread is not None else ""
        candidate.rfc_message_id = message.message_id or message.dedupe_key
        candidate.subject = message.subject
        candidate.sender = message.sender
        candidate.from_address = message.from_address
        candidate.date = message.date
        candidate.body = message_body_text(message)[:50_000]
        candidate.loaded = True
    for attachment in (
        Attachment.objects.filter(message_id__in=list(wanted), is_inline=False)
        .exclude(extracted_text__isnull=True)
        .exclude(extracted_text="")
        .only("id", "message_id", "filename", "extracted_text")
        .order_by("pk")
    ):
        wanted[attachment.message_id].attachments.append(
            AttachmentText(
                id=attachment.pk, filename=attachment.filename, text=(attachment.extracted_text or "")[:50_000]
            )
        )
