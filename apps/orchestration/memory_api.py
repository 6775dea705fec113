"""Orchestration's memory API (spec §3.2.2, mounted in mailagent/urls.py): /api/memory (list with search and
scope, get, create, update, delete), owner-scoped like the Memory page. Content is encrypted at rest and
searched after decryption, like the memory tool.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from django.core.exceptions import ValidationError
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema, Status

from apps.orchestration import actions, selectors
from apps.orchestration.config_actions import MAX_MESSAGE_CHARS
from apps.orchestration.config_api import invalid_field, owned_agent, owned_director, refuse_nulls
from apps.orchestration.models import Memory, MemoryScope

memory_router = Router(tags=["memory"])
ScopeName = Literal["global", "shared", "local"]
ScopeFilter = Literal["", "global", "shared", "local"]
MEMORY_LIST_MAX = 500
SCOPE_HELP = (
    "global: every director; shared: one director and all its agents (directorId); local: one agent "
    "(agentId) or the director itself (directorId)"
)


MEMORY_QUERY = Query("", max_length=1000, description="Words that must all occur in the content (any case)")
MEMORY_SCOPE = Query("", description="Only this scope (empty: all)")
MEMORY_DIRECTOR = Query(None, description="Only this director's shared and local memories")
MEMORY_LIMIT = Query(100, ge=1, le=MEMORY_LIST_MAX, description="At most this many memories")
MEMORY_OFFSET = Query(0, ge=0, le=10**9, description="Skip this many (the next page)")


class MemoryOut(Schema):
    id: int
    content: str
    scope: str = Field(description=SCOPE_HELP)
    timestamp: dt.datetime = Field(description="Last change")
    createdAt: dt.datetime
    directorId: int | None
    directorName: str
    agentId: int | None
    agentName: str
    tags: list[Any]


class MemoryListOut(Schema):
    total: int = Field(description="How many memories match (the page holds at most `limit` of them)")
    memories: list[MemoryOut]


class MemoryIn(Schema):
    content: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    scope: ScopeName = Field(description=SCOPE_HELP)
    directorId: int | None = None
    agentId: int | None = None
    tags: list[str] = Field(default_factory=list, max_length=50)


class MemoryPatch(Schema):
    content: str | None = Field(None, min_length=1, max_length=MAX_MESSAGE_CHARS)
    scope: ScopeName | None = Field(None, description=SCOPE_HELP)
    directorId: int | None = None
    agentId: int | None = None
    tags: list[str] | None = Field(None, max_length=50)


def _memory_out(memory: Memory) -> dict[str, Any]:
    return {
        "id": memory.pk,
        "content": str(memory.content),
        "scope": memory.scope,
        "timestamp": memory.updated_at,
        "createdAt": memory.created_at,
        "directorId": memory.director_id,
        "directorName": memory.director.name if memory.director else "",
        "agentId": memory.agent_id,
        "agentName": memory.agent.name if memory.agent else "",
        "tags": memory.tags if isinstance(memory.tags, list) else [],
    }


@memory_router.get("", response={200: MemoryListOut})
def list_memories(
    request: HttpRequest,
    q: str = MEMORY_QUERY,
    scope: ScopeFilter = MEMORY_SCOPE,
    directorId: int | None = MEMORY_DIRECTOR,
    limit: int = MEMORY_LIMIT,
    offset: int = MEMORY_OFFSET,
) -> dict[str, Any]:
    """Your memories, newest change first (spec §3.2.6: a searchable table with scope switching)."""
    found = selectors.list_memories_for_user(user=request.user, query=q, scope=scope, director_id=directorId)
    total = len(found) if isinstance(found, list) else found.count()
    return {"total": total, "memories": [_memory_out(memory) for memory in found[offset : offset + limit]]}


@memory_router.post("", response={201: MemoryOut})
def create_memory(request: HttpRequest, payload: MemoryIn) -> Status:
    """A memory: global (no director), shared (directorId) or local (agentId, or directorId for the
    director's own)."""
    user = request.user
    director = owned_director(user, payload.directorId) if payload.directorId is not None else None
    agent = owned_agent(user, payload.agentId) if payload.agentId is not None else None
    try:
        memory = actions.create_memory(
            owner=user, content=payload.content, scope=payload.scope, director=director, agent=agent, tags=payload.tags
        )
    except ValidationError as exc:
        raise invalid_field(exc) from None
    return Status(201, _memory_out(selectors.access_memory(user=user, memory_id=memory.pk)))


@memory_router.get("/{memory_id}", response={200: MemoryOut})
def get_memory(request: HttpRequest, memory_id: int) -> dict[str, Any]:
    return _memory_out(selectors.access_memory(user=request.user, memory_id=memory_id))


@memory_router.put("/{memory_id}", response={200: MemoryOut})
def update_memory(request: HttpRequest, memory_id: int, payload: MemoryPatch) -> dict[str, Any]:
    """Change the fields given. Switching the scope drops what the new scope has no use for (a global memory
    leaves its director, a shared one its agent) unless directorId/agentId are given too."""
    user = request.user
    memory = selectors.access_memory(user=user, memory_id=memory_id)
    data = payload.dict(exclude_unset=True)
    refuse_nulls(data, "content", "scope", "tags")
    scope = data.get("scope", memory.scope)
    if "agentId" in data:
        agent = owned_agent(user, data["agentId"]) if data["agentId"] is not None else None
    else:
        agent = None if scope != MemoryScope.LOCAL else memory.agent
    if "directorId" in data:
        director = owned_director(user, data["directorId"]) if data["directorId"] is not None else None
    elif "agentId" in data and agent is not None:
        director = None  # the agent's own director
    else:
        director = None if scope == MemoryScope.GLOBAL else memory.director
    try:
        actions.edit_memory(
            memory=memory,
            content=data.get("content", str(memory.content)),
            scope=scope,
            director=director,
            agent=agent,
            tags=data.get("tags", memory.tags if isinstance(memory.tags, list) else []),
        )
    except ValidationError as exc:
        raise invalid_field(exc) from None
    return _memory_out(selectors.access_memory(user=user, memory_id=memory_id))


@memory_router.delete("/{memory_id}", response={204: None})
def delete_memory(request: HttpRequest, memory_id: int) -> Status:
    actions.delete_memory(memory=selectors.access_memory(user=request.user, memory_id=memory_id))
    return Status(204, None)
