"""The writes Ask makes in the owner's library, each only on the owner's explicit request in the
conversation: save a note or a link into the library inbox, accept or reject a folder suggestion (the
organization app's own decision, journaled and undoable there), and scan the inbox for suggestions.

Ask never moves a file on its own: suggestions made here never auto-move, whatever the auto-move setting."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from django.utils import timezone

from apps.organization import actions as organization
from apps.organization.decisions import respond
from apps.organization.fsops import LibraryPathError, MoveError
from apps.organization.library import OrganizationDecisionError, OrganizationError, get_library, get_settings
from apps.organization.models import FileSource, FileStatus, LibraryFile, Move, Suggestion
from apps.organization.suggesting import suggest_for_file

MAX_NOTE_CHARS = 20_000
NAME_WORDS = 6


class LibraryRequestError(Exception):
    """A library request that cannot be done; the message says why and what to do instead."""


@dataclass(slots=True)
class Saved:
    file: LibraryFile
    is_link: bool
    suggestion: Suggestion | None


def _slug(text: str, *, words: int = NAME_WORDS) -> str:
    parts = re.findall(r"[^\W_]+", text.lower())[:words]
    return "-".join(parts)[:60].strip("-")


def _file_name(content: str, *, is_link: bool, now: dt.datetime) -> str:
    if is_link:
        parts = urlsplit(content.split()[0])
        host = (parts.hostname or "link").removeprefix("www.")
        return f"link-{_slug(host + ' ' + parts.path, words=8) or 'page'}.md"
    return f"note-{now:%Y-%m-%d}-{_slug(content) or 'text'}.md"


def save_to_library(*, owner: Any, content: str, now: dt.datetime | None = None) -> Saved:
    """Write a note (or a link, not downloaded) as a Markdown file into the owner's library inbox, where it
    is digested, indexed and suggested a folder like any other arrival (never moved without the owner)."""
    from apps.ask.intent import URL

    text = content.strip()
    if not text:
        raise LibraryRequestError("There is nothing to save: write the note or the link after “save”.")
    if len(text) > MAX_NOTE_CHARS:
        raise LibraryRequestError(f"Notes are limited to {MAX_NOTE_CHARS:,} characters; upload a file instead.")
    link = URL.match(text)
    is_link = link is not None
    now = now or timezone.now()
    body = text
    if link is not None:
        rest = text[link.end() :].strip()
        body = f"<{link.group(0)}>\n" + (f"\n{rest}\n" if rest else "")
    elif not body.endswith("\n"):
        body += "\n"
    library = get_library(owner=owner)
    try:
        file = organization.save_upload(
            library=library,
            name=_file_name(text, is_link=is_link, now=now),
            chunks=[body.encode("utf-8")],
            source=FileSource.UPLOAD,
            provenance={"saved_from": "ask", "saved_at": now.isoformat()},
        )
    except OrganizationError as exc:
        raise LibraryRequestError(str(exc)) from exc
    suggestion = None
    if get_settings(owner=owner).auto_suggest:
        suggestion = suggest_for_file(file=file, allow_auto_move=False)
    return Saved(file=file, is_link=is_link, suggestion=suggestion)


@dataclass(slots=True)
class Decided:
    suggestion: Suggestion
    move: Move | None = None
    error: str = ""


def decide_suggestions(*, suggestions: list[Suggestion], accept: bool, folder: str = "") -> list[Decided]:
    """Accept (move to the suggested folder, or to `folder` when the user named another one) or reject (keep
    in the inbox) each suggestion, through the organization app's decision (journal, undo, learning). A
    failure is reported per file; nothing else changes for it."""
    results: list[Decided] = []
    for suggestion in suggestions:
        if accept and not folder and not suggestion.target_folder:
            results.append(
                Decided(
                    suggestion=suggestion,
                    error="there is no confident folder to accept — choose one for it on the Organization page",
                )
            )
            continue
        action = ("choose" if folder else "accept") if accept else "reject"
        try:
            decided = respond(suggestion=suggestion, action=action, folder=folder)
        except (OrganizationDecisionError, LibraryPathError, MoveError) as exc:
            results.append(Decided(suggestion=suggestion, error=str(exc)))
            continue
        move = Move.objects.filter(suggestion=decided).order_by("-created_at", "-pk").first() if accept else None
        results.append(Decided(suggestion=decided, move=move))
    return results


@dataclass(slots=True)
class Organized:
    new_files: int
    missing: int
    inbox_files: int
    suggestions: list[Suggestion] = field(default_factory=list)
    skipped_rejected: int = 0
    errors: list[str] = field(default_factory=list)


def organize_inbox(*, owner: Any) -> Organized:
    """The organization scan for the owner (new and changed files digested, the classifier retrained when
    needed), then a suggestion for every inbox file that has none — asked for here, so made even when
    automatic suggestions are off, and never auto-moved."""
    library = get_library(owner=owner)
    scanned = organization.scan_library(library=library, suggest=False)
    inbox = list(
        LibraryFile.objects.filter(library=library, status=FileStatus.INBOX).select_related("library").order_by("pk")
    )
    result = Organized(
        new_files=len(scanned.new_files), missing=scanned.missing, inbox_files=len(inbox), errors=scanned.errors
    )
    for file in inbox:
        suggestion = suggest_for_file(file=file, allow_auto_move=False)
        if suggestion is None:
            result.skipped_rejected += 1  # the owner rejected a suggestion for it before
        else:
            result.suggestions.append(suggestion)
    return result
