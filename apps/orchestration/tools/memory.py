"""memory_* tools. Search cascades local → shared → global: local memories belong to the calling agent
(or the director itself), shared ones to the director and all its agents, global ones to every director
of the owner. Without the director's memory access only local memories are reachable."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from apps.orchestration.models import Agent, Memory, MemoryScope
from apps.orchestration.tools.context import Actor, RunContext
from apps.orchestration.tools.schemas import MemoryAddArgs, MemoryEditArgs, MemorySearchArgs
from mailagent.llm import ToolFailure

SEARCH_LIMIT = 30
CASCADE: dict[str, int] = {"local": 0, "shared": 1, "global": 2}


def _local_filter(ctx: RunContext, agent: Agent | None) -> Q:
    if agent is not None:
        return Q(scope=MemoryScope.LOCAL, agent=agent)
    return Q(scope=MemoryScope.LOCAL, director=ctx.director, agent__isnull=True)


def visible_memories(ctx: RunContext, agent: Agent | None) -> QuerySet[Memory]:
    """What an agent (or, with None, the director itself) may see."""
    visible = _local_filter(ctx, agent)
    if ctx.director.memory_access:
        visible |= Q(scope=MemoryScope.SHARED, director=ctx.director) | Q(scope=MemoryScope.GLOBAL)
    return Memory.objects.filter(visible, owner_id=ctx.owner_id)


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
    memories = visible_memories(ctx, actor.agent)
    if args.scope:
        memories = memories.filter(scope=args.scope)
    if args.owner:
        if args.owner == "director":
            memories = memories.filter(scope=MemoryScope.LOCAL, agent__isnull=True)
        else:
            memories = memories.filter(scope=MemoryScope.LOCAL, agent__slug=args.owner)
    for word in (args.query or "").split():
        memories = memories.filter(content__icontains=word)
    found = list(memories.order_by("-updated_at", "-pk")[:500])
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
