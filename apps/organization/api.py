"""The seed's organization API: /api/inbox/suggestions, /api/inbox/organize, /api/settings/organization and
/api/organization/moves/<id>/undo (plus upload). Separate routers, mounted at distinct sub-paths, so other
/api/inbox/* routers live beside them."""

from __future__ import annotations

import logging
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, File, Query, Router, Schema
from ninja.errors import HttpError
from ninja.files import UploadedFile

from apps.organization import actions, roots, selectors
from apps.organization.decisions import respond, undo_move
from apps.organization.library import OrganizationDecisionError, OrganizationError, get_library, get_settings
from apps.organization.serializers import move_detail, suggestion_detail
from apps.organization.suggesting import suggest_for_file, suggest_for_inbox

logger = logging.getLogger(__name__)

suggestions_router = Router(tags=["organization"])
organize_router = Router(tags=["organization"])
settings_router = Router(tags=["organization"])
organization_router = Router(tags=["organization"])


class SuggestionsQuery(Schema):
    status: str | None = Field(None, description="pending, accepted, rejected, expired (comma-separated)")
    limit: int = Field(100, ge=1, le=500)


class RespondIn(Schema):
    action: Literal["accept", "reject", "choose"]
    targetFolder: str | None = None


class OrganizeIn(Schema):
    paths: list[str] | None = None
    force: bool = False


class SettingsIn(Schema):
    autoSuggest: bool | None = None
    suggestThreshold: float | None = Field(None, ge=0, le=1)
    autoMove: bool | None = None
    autoMoveThreshold: float | None = Field(None, ge=0, le=1)
    targetFolders: list[str] | None = None
    excludeFolders: list[str] | None = None
    libraryRoot: str | None = None
    apiConfigId: int | None = None


def _settings_out(owner: Any) -> dict[str, Any]:
    settings = get_settings(owner=owner)
    library = get_library(owner=owner)
    return {
        "autoSuggest": settings.auto_suggest,
        "suggestThreshold": settings.suggest_threshold,
        "autoMove": settings.auto_move,
        "autoMoveThreshold": settings.auto_move_threshold,
        "targetFolders": settings.target_folders,
        "excludeFolders": settings.exclude_folders,
        "libraryRoot": library.root,
        # Why the root is not used (outside the allowed folders), "" when it is fine.
        "libraryRootProblem": roots.library_problem(library),
        "apiConfigId": settings.api_config_id,
    }


@suggestions_router.get("", summary="List suggestions")
def list_suggestions(request: HttpRequest, params: Query[SuggestionsQuery]) -> list[dict[str, Any]]:
    library = get_library(owner=request.user)
    rows = selectors.list_suggestions(library=library, status=params.status, limit=params.limit)
    return [suggestion_detail(s) for s in rows]


@suggestions_router.post("/{suggestion_id}/respond", summary="Accept, reject or choose another folder")
def respond_to_suggestion(request: HttpRequest, suggestion_id: int, payload: RespondIn) -> dict[str, Any]:
    suggestion = selectors.access_suggestion(user=request.user, suggestion_id=suggestion_id)
    try:
        decided = respond(suggestion=suggestion, action=payload.action, folder=payload.targetFolder or "")
    except OrganizationDecisionError as exc:
        raise HttpError(409, str(exc)) from exc
    decided.refresh_from_db()
    move = decided.moves.filter(undone_at__isnull=True).first()
    return {**suggestion_detail(decided), "move": move_detail(move) if move else None}


@organize_router.post("", summary="Scan the inbox and suggest folders")
def organize(request: HttpRequest, payload: OrganizeIn) -> dict[str, Any]:
    library = get_library(owner=request.user)
    result = actions.scan_library(library=library, suggest=False)
    paths = None
    if payload.paths is not None:
        from apps.organization.fsops import LibraryPathError, normalize_relative

        try:
            paths = [normalize_relative(p) for p in payload.paths]
        except LibraryPathError as exc:
            raise HttpError(422, str(exc)) from exc
    made = suggest_for_inbox(library=library, force=payload.force, paths=paths)
    return {
        "newFiles": [f.path for f in result.new_files],
        "missing": result.missing,
        "errors": result.errors,
        "suggestions": [suggestion_detail(s) for s in made],
    }


@settings_router.get("", summary="Organization settings")
def get_organization_settings(request: HttpRequest) -> dict[str, Any]:
    return _settings_out(request.user)


@settings_router.put("", summary="Update organization settings")
def put_organization_settings(request: HttpRequest, payload: SettingsIn) -> dict[str, Any]:
    data = payload.dict(exclude_unset=True)
    names = {
        "autoSuggest": "auto_suggest",
        "suggestThreshold": "suggest_threshold",
        "autoMove": "auto_move",
        "autoMoveThreshold": "auto_move_threshold",
        "targetFolders": "target_folders",
        "excludeFolders": "exclude_folders",
        "libraryRoot": "root",
        "apiConfigId": "api_config_id",
    }
    try:
        actions.update_settings(owner=request.user, changes={names[k]: v for k, v in data.items()})
    except OrganizationError as exc:
        raise HttpError(422, str(exc)) from exc
    return _settings_out(request.user)


@organization_router.post("/moves/{move_id}/undo", summary="Undo a move")
def undo(request: HttpRequest, move_id: int) -> dict[str, Any]:
    move = selectors.access_move(user=request.user, move_id=move_id)
    try:
        undone = undo_move(move=move)
    except OrganizationDecisionError as exc:
        raise HttpError(409, str(exc)) from exc
    return move_detail(undone)


@organization_router.post("/upload", summary="Upload files into the library inbox", url_name="organization_upload")
def upload(request: HttpRequest, files: list[UploadedFile] = File(...)) -> dict[str, Any]:  # noqa: B008
    """Each file is saved on its own: `saved` lists those in the inbox, `failed` those refused with why. Only
    when none could be saved is it an error (422)."""
    library = get_library(owner=request.user)
    auto = get_settings(owner=request.user).auto_suggest
    saved: list[dict[str, Any]] = []
    failed: list[dict[str, str]] = []
    for upload_file in files:
        try:
            file = actions.save_upload(library=library, name=upload_file.name or "", chunks=upload_file.chunks())
        except OrganizationError as exc:
            failed.append({"name": upload_file.name or "", "error": str(exc)})
            continue
        suggestion, problem = None, ""
        if auto:
            try:
                suggestion = suggest_for_file(file=file)
            except Exception as exc:
                logger.exception("organization: suggesting a folder for upload %s failed", file.path)
                problem = f"Saved, but no folder could be suggested yet ({exc}); a scan retries."
        row: dict[str, Any] = {"file": file.path, "suggestion": suggestion_detail(suggestion) if suggestion else None}
        if problem:
            row["error"] = problem
        saved.append(row)
    if not saved and failed:
        raise HttpError(422, " ".join(f["error"] for f in failed))
    return {"saved": saved, "failed": failed}
