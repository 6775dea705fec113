"""The organize agent (when the owner picked an ApiConfig): the seed's tools (read_guideline, get_folder_tree,
get_file, list_recent_files, create_suggestion) through apps.llm's tool loop, given the classifier's
candidates. Its transcript and provider events are stored on the suggestion. Any failure (provider error,
no suggestion made, a folder outside the allowed ones) falls back to the classifier's proposal, saying so."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from apps.llm import LLMConfig
from apps.llm.client import LLMError, ProviderEventData
from apps.llm.configs import llm_config
from apps.llm.tools import Tool, ToolFailure, run_tool_loop
from apps.organization import fsops, selectors
from apps.organization.fsops import LibraryPathError
from apps.organization.models import FileStatus, LibraryFile, OrganizationSettings, SuggestionSource
from apps.organization.proposals import ALTERNATIVES, Proposal, folder_allowed

logger = logging.getLogger(__name__)
STEP_LIMIT = 8
MAX_FILE_TEXT = 4000

SYSTEM_PROMPT = """You are the organize agent of a personal library. A new file has arrived in the inbox folder.
1. Examine the file (get_file), 2. read the owner's guideline (read_guideline), 3. look at the folder tree
(get_folder_tree), and 4. call create_suggestion once with the best folder, a 1-2 sentence reason, your
confidence (0-1) and up to three alternatives. Prefer existing folders; propose a new folder only when none fits.
A learned classifier trained on the owner's own filing ranked these folders (calibrated probabilities):
{candidates}
"""


class NoArgs(BaseModel):
    pass


class FolderTreeArgs(BaseModel):
    depth: int = Field(2, ge=1, le=6, description="How deep to list folders")


class GetFileArgs(BaseModel):
    path: str = Field(description="File path relative to the library root, e.g. inbox/scan.pdf")


class RecentArgs(BaseModel):
    limit: int = Field(10, ge=1, le=50)
    type: str = Field("", description="Only files whose MIME type starts with this, e.g. application/pdf")


class Alternative(BaseModel):
    folder: str
    confidence: float = Field(ge=0, le=1)


class CreateSuggestionArgs(BaseModel):
    file_path: str
    target_folder: str
    reasoning: str = Field(max_length=2000)
    confidence: float = Field(ge=0, le=1)
    alternatives: list[Alternative] = Field(default_factory=list, max_length=ALTERNATIVES)


def llm_config_for(settings: OrganizationSettings) -> LLMConfig | None:
    """The organization model's client configuration (None: the classifier decides alone). Raises
    UndecryptableApiKey (an LLMError) when its stored key cannot be decrypted."""
    return llm_config(settings.api_config) if settings.api_config is not None else None


def _describe(file: LibraryFile) -> dict[str, Any]:
    return {
        "path": file.path,
        "name": file.name,
        "folder": file.folder,
        "mimeType": file.mime_type,
        "kind": file.digest_kind,
        "size": file.size,
        "metadata": file.metadata,
        "provenance": file.provenance,
    }


def build_tools(
    file: LibraryFile, settings: OrganizationSettings, exclude: Sequence[str], made: list[Proposal]
) -> list[Tool]:
    library = file.library

    def read_guideline(_args: NoArgs) -> str:
        return selectors.read_guideline(library=library) or "No guideline.md yet."

    def get_folder_tree(args: FolderTreeArgs) -> list[str]:
        folders = fsops.folder_tree(library.root_path, depth=args.depth)
        return [f for f in folders if folder_allowed(f, settings, exclude)]

    def get_file(args: GetFileArgs) -> dict[str, Any]:
        found = (
            LibraryFile.objects.filter(library=library, path=args.path.strip().lstrip("/"))
            .exclude(status=FileStatus.MISSING)
            .first()
        )
        if found is None:
            raise ToolFailure(f"No file {args.path!r} in the library.")
        return {**_describe(found), "text": found.digest_text[:MAX_FILE_TEXT]}

    def list_recent_files(args: RecentArgs) -> list[dict[str, Any]]:
        rows = LibraryFile.objects.filter(library=library).exclude(status=FileStatus.MISSING)
        if args.type:
            rows = rows.filter(mime_type__startswith=args.type)
        return [_describe(f) for f in rows.order_by("-created_at", "-pk")[: args.limit]]

    def create_suggestion(args: CreateSuggestionArgs) -> dict[str, Any]:
        if args.file_path.strip().lstrip("/") != file.path:
            raise ToolFailure(f"Suggest a folder for {file.path} only.")
        try:
            folder = fsops.normalize_folder(args.target_folder)
        except LibraryPathError as exc:
            raise ToolFailure(str(exc)) from exc
        if not folder_allowed(folder, settings, exclude):
            raise ToolFailure(f"{folder} is excluded by the owner's settings (or was rejected for this file).")
        alternatives = [
            {"folder": a.folder.strip("/"), "confidence": round(a.confidence, 4)} for a in args.alternatives
        ]
        made.append(
            Proposal(
                folder=folder,
                confidence=args.confidence,
                reasoning=args.reasoning.strip(),
                alternatives=alternatives,
                source=SuggestionSource.LLM,
            )
        )
        return {"ok": True, "folder": folder}

    return [
        Tool("read_guideline", "Read the owner's guideline.md (how they organize files).", NoArgs, read_guideline),
        Tool("get_folder_tree", "List the library folders (destinations).", FolderTreeArgs, get_folder_tree),
        Tool("get_file", "A file's metadata and extracted text.", GetFileArgs, get_file),
        Tool("list_recent_files", "Recently added files and where they are.", RecentArgs, list_recent_files),
        Tool(
            "create_suggestion",
            "Create the pending suggestion to move the file to a folder (the owner confirms it).",
            CreateSuggestionArgs,
            create_suggestion,
        ),
    ]


def agent_proposal(
    *, file: LibraryFile, settings: OrganizationSettings, candidate: Proposal, exclude: Sequence[str]
) -> Proposal:
    if settings.api_config is None:
        return candidate
    ranked = candidate.alternatives or []
    candidates = "\n".join(f"- {a['folder']}: {a['confidence']:.2f}" for a in ranked) or "- (no folders learned yet)"
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT.format(candidates=candidates)},
        {"role": "user", "content": f"A new file has arrived in the inbox: {file.path}. Suggest where it belongs."},
    ]
    events: list[dict[str, Any]] = []

    def record(event: ProviderEventData) -> None:
        events.append(json.loads(json.dumps(dataclasses.asdict(event), default=str)))

    made: list[Proposal] = []
    note = ""
    try:
        config = llm_config(settings.api_config)
        run_tool_loop(
            config, messages, build_tools(file, settings, exclude, made), step_limit=STEP_LIMIT, events=record
        )
    except LLMError as exc:
        note = f"The organize agent failed ({exc.category}: {exc}); the classifier's proposal is shown."
    if made:
        proposal = made[-1]
        if not proposal.alternatives:
            proposal.alternatives = ranked[:ALTERNATIVES]
    else:
        proposal = dataclasses.replace(candidate)
        note = note or "The organize agent made no suggestion; the classifier's proposal is shown."
        proposal.reasoning = f"{note} {candidate.reasoning}"
    proposal.transcript = json.loads(json.dumps(messages, default=str))
    proposal.provider_events = events
    return proposal
