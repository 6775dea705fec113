"""Plain-dict shapes shared by the CLI's --json output and the API."""

from __future__ import annotations

from typing import Any

from apps.organization.models import Move, Suggestion


def suggestion_brief(suggestion: Suggestion) -> dict[str, Any]:
    """{id, file, folder|null, confidence, alternatives: [{folder, confidence, evidence}], source}; paths relative
    to the root."""
    return {
        "id": suggestion.pk,
        "file": suggestion.file.path,
        "folder": suggestion.target_folder or None,
        "confidence": round(suggestion.confidence, 4),
        "alternatives": [
            {
                "folder": a.get("folder"),
                "confidence": round(float(a.get("confidence", 0)), 4),
                "evidence": [str(e) for e in a.get("evidence") or []],
            }
            for a in suggestion.alternatives
        ],
        "source": suggestion.source,
    }


def suggestion_detail(suggestion: Suggestion) -> dict[str, Any]:
    file = suggestion.file
    return {
        **suggestion_brief(suggestion),
        "status": suggestion.status,
        "reasoning": suggestion.reasoning,
        "action": suggestion.action or None,
        "finalFolder": suggestion.final_folder or None,
        "expiredReason": suggestion.expired_reason or None,
        "createdAt": suggestion.created_at.isoformat(),
        "decidedAt": suggestion.decided_at.isoformat() if suggestion.decided_at else None,
        "fileInfo": {
            "name": file.name,
            "size": file.size,
            "mimeType": file.mime_type,
            "kind": file.digest_kind,
            "sha256": file.sha256,
            "provenance": file.provenance,
        },
    }


def move_detail(move: Move) -> dict[str, Any]:
    return {
        "id": move.pk,
        "from": move.from_path,
        "to": move.to_path,
        "sha256": move.sha256,
        "reason": move.reason,
        "createdAt": move.created_at.isoformat(),
        "undoneAt": move.undone_at.isoformat() if move.undone_at else None,
        "suggestion": move.suggestion_id,
    }
