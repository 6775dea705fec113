"""The Organization page: pending suggestion cards, history with undo, upload, settings, guideline. Thin
views: parse → access → one action → render the workspace partial (htmx) or redirect to the page."""

from __future__ import annotations

import logging
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.llm.selectors import api_configs_for_user
from apps.organization import actions, fsops, guideline, roots, selectors
from apps.organization.decisions import respond, undo_move
from apps.organization.library import OrganizationDecisionError, OrganizationError, get_library, get_settings
from apps.organization.models import ClassifierState, FileStatus, LibraryFile
from apps.organization.suggesting import suggest_for_file

logger = logging.getLogger(__name__)


def _context(request: HttpRequest, *, error: str = "", notice: str = "") -> dict[str, Any]:
    library = get_library(owner=request.user)
    settings = get_settings(owner=request.user)
    problem = roots.library_problem(library)
    return {
        "library": library,
        "settings": settings,
        "pending": selectors.pending_suggestions(library=library),
        "unsuggested": LibraryFile.objects.filter(library=library, status=FileStatus.INBOX)
        .exclude(suggestions__status="pending")
        .order_by("path")[:50],
        "moves": selectors.recent_moves(library=library),
        "folders": [] if problem else fsops.folder_tree(library.root_path, depth=4),
        "guideline": selectors.read_guideline(library=library),
        "proposals": selectors.pending_proposals(library=library),
        "classifier": ClassifierState.objects.filter(library=library).first(),
        "api_configs": api_configs_for_user(user=request.user).only("pk", "name", "model"),
        "root_problem": problem,
        "library_base": roots.library_base(library.owner_id),
        "library_parents": roots.allowed_parents(request.user),
        "error": error,
        "notice": notice,
    }


def _finish(request: HttpRequest, *, error: str = "", notice: str = "") -> HttpResponse:
    if getattr(request, "htmx", False):
        context = _context(request, error=error, notice=notice)
        return render(request, "organization/partials/workspace.html", context)
    if error:
        messages.error(request, error)
    elif notice:
        messages.success(request, notice)
    return redirect("organization:page")


@require_GET
def page(request: HttpRequest) -> HttpResponse:
    return render(request, "organization/pages/organization.html", _context(request))


@require_GET
def transcript_view(request: HttpRequest, suggestion_id: int) -> HttpResponse:
    """Why a suggestion: its reasoning, and the organize agent's transcript and provider events when the LLM
    made (or tried to make) it."""
    suggestion = selectors.access_suggestion(user=request.user, suggestion_id=suggestion_id)
    context = {
        "suggestion": suggestion,
        "turns": selectors.transcript_turns(suggestion=suggestion),
        "events": selectors.provider_event_rows(suggestion=suggestion),
    }
    return render(request, "organization/pages/transcript.html", context)


@require_POST
def respond_view(request: HttpRequest, suggestion_id: int) -> HttpResponse:
    suggestion = selectors.access_suggestion(user=request.user, suggestion_id=suggestion_id)
    action = request.POST.get("action", "")
    try:
        decided = respond(suggestion=suggestion, action=action, folder=request.POST.get("folder", ""))
    except OrganizationDecisionError as exc:
        return _finish(request, error=str(exc))
    if decided.status == "rejected":
        return _finish(request, notice=f"{decided.file.name} stays in the inbox.")
    return _finish(request, notice=f"Moved {decided.file.name} to {decided.final_folder}.")


@require_POST
def bulk_accept(request: HttpRequest) -> HttpResponse:
    library = get_library(owner=request.user)
    try:
        floor = float(request.POST.get("min_confidence", "0.9"))
    except ValueError:
        return _finish(request, error="The confidence must be a number between 0 and 1.")
    moved, problems = 0, []
    for suggestion in selectors.pending_suggestions(library=library):
        if suggestion.target_folder and suggestion.confidence >= floor:
            try:
                respond(suggestion=suggestion, action="accept")
                moved += 1
            except OrganizationDecisionError as exc:
                problems.append(f"{suggestion.file.name}: {exc}")
    return _finish(request, notice=f"Accepted {moved} suggestions at ≥ {floor:.0%}.", error="; ".join(problems))


@require_POST
def undo_view(request: HttpRequest, move_id: int) -> HttpResponse:
    move = selectors.access_move(user=request.user, move_id=move_id)
    try:
        undone = undo_move(move=move)
    except OrganizationDecisionError as exc:
        return _finish(request, error=str(exc))
    return _finish(request, notice=f"Moved back to {undone.from_path}.")


@require_POST
def upload(request: HttpRequest) -> HttpResponse:
    library = get_library(owner=request.user)
    files = request.FILES.getlist("files")
    if not files:
        return _finish(request, error="Choose or drop one or more files to upload.")
    auto = get_settings(owner=request.user).auto_suggest
    names: list[str] = []
    problems: list[str] = []
    for uploaded in files:
        # One file's failure never loses the others: each is saved (and suggested) on its own.
        try:
            file = actions.save_upload(library=library, name=uploaded.name or "", chunks=uploaded.chunks())
        except OrganizationError as exc:
            problems.append(str(exc))
            continue
        names.append(file.name)
        if auto:
            try:
                suggest_for_file(file=file)
            except Exception as exc:
                logger.exception("organization: suggesting a folder for upload %s failed", file.path)
                problems.append(f"{file.name} was saved, but no folder could be suggested yet ({exc}); Scan retries.")
    notice = f"Uploaded {', '.join(names)} to the inbox." if names else ""
    error = " ".join(problems)
    if problems and names:
        error = f"Not everything went in: {error}"
    return _finish(request, notice=notice, error=error)


@require_POST
def scan(request: HttpRequest) -> HttpResponse:
    library = get_library(owner=request.user)
    result = actions.scan_library(library=library, force=request.POST.get("force") == "1")
    return _finish(
        request,
        notice=f"Scanned: {len(result.new_files)} new, {result.missing} gone, {len(result.suggestions)} pending.",
        error="; ".join(result.errors[:3]),
    )


@require_POST
def settings_view(request: HttpRequest) -> HttpResponse:
    post = request.POST

    def folders(name: str) -> list[str]:
        return [line.strip() for line in post.get(name, "").replace(",", "\n").splitlines() if line.strip()]

    changes: dict[str, Any] = {
        "auto_suggest": post.get("auto_suggest") == "on",
        "auto_move": post.get("auto_move") == "on",
        "target_folders": folders("target_folders"),
        "exclude_folders": folders("exclude_folders"),
        "api_config_id": int(post["api_config"]) if post.get("api_config", "").isdigit() else None,
    }
    try:
        changes["suggest_threshold"] = float(post.get("suggest_threshold", "0.8"))
        changes["auto_move_threshold"] = float(post.get("auto_move_threshold", "0.95"))
    except ValueError:
        return _finish(request, error="Thresholds are numbers between 0 and 1, e.g. 0.8.")
    if post.get("root", "").strip():
        changes["root"] = post["root"].strip()
    try:
        actions.update_settings(owner=request.user, changes=changes)
    except OrganizationError as exc:
        return _finish(request, error=str(exc))
    return _finish(request, notice="Settings saved.")


@require_POST
def guideline_view(request: HttpRequest) -> HttpResponse:
    library = get_library(owner=request.user)
    try:
        actions.write_guideline(library=library, text=request.POST.get("guideline", ""))
    except OrganizationError as exc:
        return _finish(request, error=str(exc))
    return _finish(request, notice="guideline.md saved.")


@require_POST
def proposal_view(request: HttpRequest, proposal_id: int, decision: str) -> HttpResponse:
    proposal = selectors.access_proposal(user=request.user, proposal_id=proposal_id)
    try:
        guideline.decide_proposal(proposal=proposal, accept=decision == "accept")
    except OrganizationError as exc:
        return _finish(request, error=str(exc))
    return _finish(request, notice="Guideline updated." if decision == "accept" else "Proposal discarded.")
