"""Library files in an Ask conversation (reads only): the owner's files found through the one search index,
shown as cards (name, thumbnail or first lines, folder relative to the library root, link), what the router
needs to know about the conversation (a pending suggestion, a previous file search), and the folder
suggestions a "yes, move it" refers to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.http import Http404

from apps.ask.intent import RouterContext
from apps.ask.models import AskRun, Intent, RunStatus
from apps.organization.models import FileStatus, LibraryFile, Suggestion, SuggestionStatus
from apps.search.backends.base import Mode, SearchFilters
from apps.search.folding import fold_tokens
from apps.search.models import DocumentKind

CARD_LIMIT = 6
FIRST_LINES = 3
FIRST_LINES_CHARS = 280
# A mail question also shows library files that contain this many of its words (or one of its names).
MIXED_MIN_WORDS = 2
MIXED_CARDS = 3
# How far back a "yes" looks for the suggestions the conversation showed.
CONTEXT_RUNS = 6


@dataclass(slots=True)
class FileTurn:
    """The previous file search of the conversation (for "not that one, the driver's license")."""

    query: str
    kind: str
    excluded: list[int]
    top: int | None


@dataclass(slots=True)
class ConversationFiles:
    router: RouterContext
    previous: FileTurn | None = None
    shown_suggestions: list[int] = field(default_factory=list)


@dataclass(slots=True)
class FileSearch:
    query: str
    kind: str
    excluded: list[int]
    cards: list[dict[str, Any]]
    count: int
    library_files: int  # files in the owner's library at all (0: say how to add some)
    error: str = ""


def owner_file_count(owner: Any) -> int:
    return LibraryFile.objects.filter(library__owner=owner).exclude(status=FileStatus.MISSING).count()


def library_folders(owner: Any) -> tuple[str, ...]:
    """The folders of the owner's library (relative paths, without the inbox), for "move it to <folder>"."""
    from apps.organization.fsops import folder_tree
    from apps.organization.models import Library

    library = Library.objects.filter(owner=owner).first()
    return tuple(folder_tree(library.root_path)) if library is not None else ()


def conversation_files(*, run_id: Any, owner: Any) -> ConversationFiles:
    """The router's context for one run: the owner's pending suggestions, the ones this conversation showed
    last (still pending), and the previous turn's file search, if the previous turn was one."""
    run = AskRun.objects.filter(pk=run_id, owner=owner).only("conversation_id", "created_at").first()
    earlier: list[AskRun] = []
    if run is not None:
        earlier = list(
            AskRun.objects.filter(conversation_id=run.conversation_id, created_at__lte=run.created_at)
            .exclude(pk=run.pk)
            .filter(status=RunStatus.DONE)
            .only("intent", "plan", "scope")
            .order_by("-created_at", "-pk")[:CONTEXT_RUNS]
        )
    shown: list[int] = []
    for item in earlier:
        ids = [int(s["suggestion_id"]) for s in (item.scope or {}).get("suggestions") or []]
        if ids:
            shown = ids
            break
    pending = Suggestion.objects.filter(file__library__owner=owner, status=SuggestionStatus.PENDING)
    shown_pending = list(pending.filter(pk__in=shown).values_list("pk", flat=True)) if shown else []
    previous = None
    if earlier and earlier[0].intent == Intent.QUERY_FILES:
        saved = (earlier[0].plan or {}).get("files") or {}
        previous = FileTurn(
            query=str(saved.get("query") or ""),
            kind=str(saved.get("kind") or ""),
            excluded=[int(pk) for pk in saved.get("excluded") or []],
            top=saved.get("top"),
        )
    pending_count = pending.count()
    router = RouterContext(
        pending_suggestions=pending_count,
        folders=library_folders(owner) if pending_count else (),
        shown_pending=len(shown_pending),
        last_file_query=previous is not None,
        has_files=owner_file_count(owner) > 0,
    )
    return ConversationFiles(router=router, previous=previous, shown_suggestions=shown_pending)


def _file_conditions(kind: str, excluded: list[int]) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    conditions: list[tuple[str, tuple[Any, ...]]] = []
    files = LibraryFile._meta.db_table
    if kind:
        sql = f"{{d}}.object_id IN (SELECT f.id FROM {files} f WHERE f.digest_kind = %s)"  # noqa: S608 (a table name)
        conditions.append((sql, (kind,)))
    if excluded:
        conditions.append((f"{{d}}.object_id NOT IN ({', '.join(['%s'] * len(excluded))})", tuple(excluded)))
    return tuple(conditions)


def first_lines(text: str) -> str:
    lines = [" ".join(line.split()) for line in (text or "").splitlines()]
    shown = "\n".join([line for line in lines if line][:FIRST_LINES])
    return shown[:FIRST_LINES_CHARS] + ("…" if len(shown) > FIRST_LINES_CHARS else "")


def file_card(file: LibraryFile, *, snippet: str = "", score: float = 0.0, sources: list[str] | None = None) -> dict:
    """What a file card shows, stored with the run (JSON): the folder relative to the library root."""
    return {
        "file_id": file.pk,
        "name": file.name,
        "path": file.path,
        "folder": file.folder,
        "in_inbox": file.status == FileStatus.INBOX,
        "is_image": file.digest_kind == "image",
        "kind": file.digest_kind,
        "lines": "" if file.digest_kind == "image" else first_lines(file.digest_text),
        "snippet": snippet,
        "score": round(score, 4),
        "sources": sources or [],
        "size": file.size,
    }


def search_files(
    *, owner: Any, query: str, kind: str = "", excluded: list[int] | None = None, mode: Mode = "hybrid"
) -> FileSearch:
    """The owner's library files for `query` (newest first when it is empty), hybrid-ranked by the search
    index with everything else that is searchable, restricted to the owner's own files."""
    from apps.search.selectors import search_page

    excluded = list(excluded or [])
    total = owner_file_count(owner)
    result = FileSearch(query=query, kind=kind, excluded=excluded, cards=[], count=0, library_files=total)
    if not total:
        return result
    base = SearchFilters(kinds=(DocumentKind.FILE.value,), conditions=_file_conditions(kind, excluded))
    # Only words reach the query parser: a stray "from:" or "-x" in a request is not an operator here.
    text = " ".join(fold_tokens(query)) if query.strip() else ""
    try:
        page = search_page(text, user=owner, mode=mode, per_page=CARD_LIMIT, base=base)
    except ValueError as exc:
        result.error = str(exc)
        return result
    pks = [row.pk for row in page.rows if row.kind == "file"]
    files = (
        LibraryFile.objects.filter(pk__in=pks, library__owner=owner)
        .exclude(status=FileStatus.MISSING)
        .select_related("library")
        .in_bulk()
    )
    for row in page.rows:
        file = files.get(row.pk)
        if row.kind == "file" and file is not None:
            result.cards.append(file_card(file, snippet=row.snippet, score=row.score, sources=list(row.sources)))
    result.count = max(page.count, len(result.cards)) if text else len(result.cards)
    return result


def mixed_file_cards(*, owner: Any, words: list[str], entities: list[str]) -> list[dict[str, Any]]:
    """For a mail question: the owner's files that contain at least MIXED_MIN_WORDS of its words or one of
    its names (a file that only shares one common word is not shown)."""
    query = " ".join([*entities, *words])
    if not query.strip():
        return []
    # Keyword side only: a file is shown for the words it contains (checked below), so meaning-only hits
    # would be dropped anyway, and a mail question does not pay for a second query embedding.
    found = search_files(owner=owner, query=query, mode="keyword")
    if not found.cards:
        return []
    wanted = {token for word in words for token in fold_tokens(word)}
    names = {token for entity in entities for token in fold_tokens(entity)}
    texts = dict(
        LibraryFile.objects.filter(pk__in=[c["file_id"] for c in found.cards]).values_list("pk", "digest_text")
    )
    kept = []
    for card in found.cards:
        tokens = set(fold_tokens(f"{card['path']} {texts.get(card['file_id'], '')}"))
        if tokens & names or len(tokens & wanted) >= MIXED_MIN_WORDS:
            kept.append(card)
    return kept[:MIXED_CARDS]


def suggestion_row(suggestion: Suggestion) -> dict[str, Any]:
    return {
        "suggestion_id": suggestion.pk,
        "file_id": suggestion.file_id,
        "name": suggestion.file.name,
        "path": suggestion.file.path,
        "target": suggestion.target_folder,
        "confidence": round(suggestion.confidence, 4),
        "reasoning": suggestion.reasoning,
        "alternatives": suggestion.alternatives,
        "status": suggestion.status,
    }


def pending_for_decision(*, owner: Any, shown: list[int]) -> list[Suggestion]:
    """The suggestions a yes/no can mean: those the conversation showed last and that are still pending,
    else every pending suggestion of the owner."""
    pending = (
        Suggestion.objects.filter(file__library__owner=owner, status=SuggestionStatus.PENDING)
        .select_related("file__library")
        .order_by("-created_at", "-pk")
    )
    chosen = list(pending.filter(pk__in=shown)) if shown else []
    return chosen or list(pending)


def pick_by_name(suggestions: list[Suggestion], words: list[str]) -> list[Suggestion]:
    """The suggestions whose file name contains every word the user named ("yes, move the invoice")."""
    wanted = {token for word in words if word != "all" for token in fold_tokens(word)}
    if not wanted:
        return suggestions
    return [s for s in suggestions if wanted <= set(fold_tokens(s.file.path))]


def current_suggestions(ids: list[int], *, owner: Any) -> dict[int, Suggestion]:
    """The suggestions a finished run showed, as they are now (a card shows whether it was decided since)."""
    if not ids:
        return {}
    return Suggestion.objects.filter(pk__in=ids, file__library__owner=owner).select_related("file").in_bulk()


def access_library_file(*, user: Any, file_id: object) -> LibraryFile:
    try:
        pk = int(str(file_id))
    except ValueError:
        raise Http404("No such file") from None
    found = (
        LibraryFile.objects.select_related("library")
        .filter(pk=pk, library__owner=user)
        .exclude(status=FileStatus.MISSING)
        .first()
    )
    if found is None:
        raise Http404("No such file")
    return found
