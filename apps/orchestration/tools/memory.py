"""memory_* tools. Search cascades local → shared → global: local memories belong to the calling agent
(or the director itself), shared ones to the director and all its agents, global ones to every director
of the owner. Without the director's memory access only local memories are reachable."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from apps.llm import ToolFailure
from apps.orchestration.models import Agent, Memory, MemoryScope
from apps.orchestration.prepared import PreparedQuery
from apps.orchestration.tools.context import Actor, RunContext
from apps.orchestration.tools.schemas import MemoryAddArgs, MemoryEditArgs, MemorySearchArgs

SEARCH_LIMIT = 30
CASCADE: dict[str, int] = {"local": 0, "shared": 1, "global": 2}


def _visible(*, owner_id: Any, director_id: Any, agent_id: Any, memory_access: bool) -> QuerySet[Memory]:
    if agent_id is not None:
        visible = Q(scope=MemoryScope.LOCAL, agent_id=agent_id)
    else:
        visible = Q(scope=MemoryScope.LOCAL, director_id=director_id, agent__isnull=True)
    if memory_access:
        visible |= Q(scope=MemoryScope.SHARED, director_id=director_id) | Q(scope=MemoryScope.GLOBAL)
    return Memory.objects.filter(visible, owner_id=owner_id)


def visible_memories(ctx: RunContext, agent: Agent | None) -> QuerySet[Memory]:
    """What an agent (or, with None, the director itself) may see."""
    return _visible(
        owner_id=ctx.owner_id,
        director_id=ctx.director.pk,
        agent_id=agent.pk if agent is not None else None,
        memory_access=ctx.director.memory_access,
    )


SEARCH_CAP = 500  # memories a search counts at most ("total")


def _search_queryset(*, memory_access: bool, owner_kind: str, limited: bool, **values: Any) -> QuerySet[Memory]:
    """memory_search's query without its words: `owner_kind` is "" (any), "director" or "agent" (then
    `owner_slug` names it). The content is encrypted at rest, so the words are matched in Python
    (`Memory.matches`) over every visible memory; without words (`limited`) the newest SEARCH_CAP are enough."""
    memories = _visible(
        owner_id=values["owner_id"],
        director_id=values.get("director_id"),
        agent_id=values.get("agent_id"),
        memory_access=memory_access,
    )
    if "scope" in values:
        memories = memories.filter(scope=values["scope"])
    if owner_kind == "director":
        memories = memories.filter(scope=MemoryScope.LOCAL, agent__isnull=True)
    elif owner_kind == "agent":
        memories = memories.filter(scope=MemoryScope.LOCAL, agent__slug=values["owner_slug"])
    memories = memories.order_by("-updated_at", "-pk")
    return memories[:SEARCH_CAP] if limited else memories


# memory_search runs in most director runs: its query is compiled once per shape (who asks, the director's
# memory access, which filters, whether there are words), then run with the values (PreparedQuery).
_SEARCHES: dict[tuple[bool, bool, bool, str, bool], PreparedQuery[Memory]] = {}


def _prepared_search(key: tuple[bool, bool, bool, str, bool]) -> PreparedQuery[Memory]:
    prepared = _SEARCHES.get(key)
    if prepared is None:
        by_agent, memory_access, scoped, owner_kind, limited = key
        names = ["owner_id"]
        if not by_agent or memory_access:
            names.append("director_id")
        if by_agent:
            names.append("agent_id")
        texts: list[str] = []
        if scoped:
            texts.append("scope")
        if owner_kind == "agent":
            texts.append("owner_slug")

        def build(**values: Any) -> QuerySet[Memory]:
            return _search_queryset(memory_access=memory_access, owner_kind=owner_kind, limited=limited, **values)

        prepared = _SEARCHES.setdefault(key, PreparedQuery(Memory, build, *names, texts=tuple(texts)))
    return prepared


def find_memories(
    *, by_agent: bool, memory_access: bool, owner_kind: str, words: Sequence[str], **values: Any
) -> list[Memory]:
    """The visible memories that hold every word (case-insensitive), newest first, at most SEARCH_CAP."""
    key = (by_agent, memory_access, "scope" in values, owner_kind, not words)
    candidates = _prepared_search(key)(**values)
    if not words:
        return candidates
    return [memory for memory in candidates if memory.matches(words)][:SEARCH_CAP]


def memory_json(memory: Memory, agent_slugs: dict[int, str] | None = None) -> dict[str, Any]:
    """`agent_slugs` (agent id → slug) saves reading each memory's agent; without it the agent is read."""
    if memory.agent_id:
        owner = agent_slugs.get(memory.agent_id, "") if agent_slugs is not None else memory.agent.slug  # type: ignore[union-attr]
    else:
        owner = "director" if memory.director_id else ""
    return {
        "id": memory.pk,
        "scope": memory.scope,
        "content": memory.content,
        "tags": memory.tags,
        "owner": owner,
        "timestamp": memory.updated_at.isoformat(),
    }


def search(ctx: RunContext, actor: Actor, args: MemorySearchArgs) -> dict[str, Any]:
    words = (args.query or "").split()
    owner_kind = "" if not args.owner else "director" if args.owner == "director" else "agent"
    memory_access = bool(ctx.director.memory_access)
    values: dict[str, Any] = {"owner_id": ctx.owner_id}
    if actor.agent is None or memory_access:
        values["director_id"] = ctx.director.pk
    if actor.agent is not None:
        values["agent_id"] = actor.agent.pk
    if args.scope:
        values["scope"] = args.scope
    if owner_kind == "agent":
        values["owner_slug"] = args.owner
    found = find_memories(
        by_agent=actor.agent is not None, memory_access=memory_access, owner_kind=owner_kind, words=words, **values
    )
    if args.tag:
        found = [m for m in found if isinstance(m.tags, list) and args.tag in m.tags]
    found.sort(key=lambda m: (CASCADE.get(m.scope, 9), -m.updated_at.timestamp()))
    shown = found[:SEARCH_LIMIT]
    # The agents' slugs in one query, and only when an agent's own memory is shown (a join on every search
    # cost more than this lookup).
    agent_ids = {m.agent_id for m in shown if m.agent_id}
    slugs = dict(Agent.objects.filter(pk__in=agent_ids).values_list("pk", "slug")) if agent_ids else {}
    return {"memories": [memory_json(m, slugs) for m in shown], "total": len(found)}


def _check_scope(ctx: RunContext, scope: str) -> None:
    if scope != MemoryScope.LOCAL and not ctx.director.memory_access:
        raise ToolFailure(f"this director has no access to {scope} memories; use scope 'local'")


def add(ctx: RunContext, actor: Actor, args: MemoryAddArgs) -> dict[str, Any]:
    _check_scope(ctx, args.scope)
    agent: Agent | None = actor.agent if args.scope == MemoryScope.LOCAL else None
    memory = Memory.objects.create(
        owner_id=ctx.owner_id,
        scope=args.scope,
        director=None if args.scope == MemoryScope.GLOBAL else ctx.director,
        agent=agent,
        content=args.content,
        tags=args.tags,
        source_run=ctx.run,
    )
    return {"memory": memory_json(memory)}


def edit(ctx: RunContext, actor: Actor, args: MemoryEditArgs) -> dict[str, Any]:
    memory = visible_memories(ctx, actor.agent).filter(pk=args.id).first()
    if memory is None:
        raise ToolFailure(f"no memory {args.id} that you can see")
    fields = ["updated_at"]
    if args.scope is not None and args.scope != memory.scope:
        _check_scope(ctx, args.scope)
        memory.scope = args.scope
        memory.agent = actor.agent if args.scope == MemoryScope.LOCAL else None
        memory.director = None if args.scope == MemoryScope.GLOBAL else ctx.director
        fields += ["scope", "agent", "director"]
    if args.content is not None:
        memory.content = args.content
        fields.append("content")
    if args.tags is not None:
        memory.tags = args.tags
        fields.append("tags")
    memory.updated_at = timezone.now()
    memory.save(update_fields=fields)
    return {"memory": memory_json(memory)}
