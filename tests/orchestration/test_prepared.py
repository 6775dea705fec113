"""Hot-path querysets compiled once (apps/orchestration/prepared.py): the rows they return are the ones the
ORM returns, related rows included, for every id they are called with."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounts.actions import create_local_account
from apps.llm.models import ApiConfig
from apps.orchestration.actions import claim_run
from apps.orchestration.models import Agent, Director, FilesystemRoot, Run
from apps.orchestration.prepared import PreparedQuery
from apps.orchestration.selectors import filesystem_root_for_owner

pytestmark = pytest.mark.django_db


def _run(owner: Any, store_mail: Any, *, name: str, key: str, with_prompt: bool, make_prompt: Any) -> Run:
    api = ApiConfig.objects.create(owner=owner, name=name, base_url="http://127.0.0.1:9/v1", api_key=key, model="m")
    prompt = make_prompt(f"{name} prompt", ("system", "Be brief.")) if with_prompt else None
    director = Director.objects.create(owner=owner, name=name, api_config=api, prompt=prompt)
    account = create_local_account(owner=owner, name=f"inbox {name}", address=f"{name}@example.com")
    message = store_mail(subject=f"mail for {name}", target=account)
    return Run.objects.create(message=message, director=director)


def test_the_claimed_run_carries_what_the_orm_would_load(user: Any, store_mail: Any, make_prompt: Any) -> None:
    first = _run(user, store_mail, name="one", key="sk-one", with_prompt=True, make_prompt=make_prompt)
    second = _run(user, store_mail, name="two", key="sk-two", with_prompt=False, make_prompt=make_prompt)
    for expected in (first, second, first):  # the second call of the same SQL binds the new id
        Run.objects.filter(pk=expected.pk).update(status="queued")
        with CaptureQueriesContext(connection) as queries:
            run = claim_run(run_id=expected.pk)
        assert run is not None and run.pk == expected.pk and run.status == "running"
        reference = Run.objects.select_related(
            "director__api_config", "director__prompt", "director__owner", "message"
        ).get(pk=expected.pk)
        assert run.started_at == reference.started_at and run.match == reference.match
        director = run.director
        assert Run.director.is_cached(run) and Run.message.is_cached(run)
        assert all(rel.is_cached(director) for rel in (Director.api_config, Director.prompt, Director.owner))
        assert director.name == reference.director.name
        assert director.api_config is not None and reference.director.api_config is not None
        assert director.api_config.api_key == reference.director.api_config.api_key  # decrypted by its converter
        assert director.api_config.api_key in ("sk-one", "sk-two")
        assert (director.prompt.pk if director.prompt else None) == reference.director.prompt_id
        assert director.owner.username == user.username
        assert run.message.subject == reference.message.subject
        assert run.message._state.db == "default" and not run._state.adding
        assert len(queries) == 2  # the claiming UPDATE and one SELECT, as before
    Run.objects.filter(pk=first.pk).update(status="running")
    assert claim_run(run_id=first.pk) is None


def test_values_lists_and_model_rows_follow_the_bound_id(user: Any, django_user_model: Any) -> None:
    other = django_user_model.objects.create_user(username="other", email="other@example.com")
    FilesystemRoot.objects.create(owner=user, path="/srv/owner-files")
    assert filesystem_root_for_owner(owner_id=user.pk) == "/srv/owner-files"
    assert filesystem_root_for_owner(owner_id=other.pk).endswith(f"/files/{other.pk}")  # no row: the default
    director = Director.objects.create(owner=user, name="D")
    Agent.objects.create(director=director, order=1, name="B", slug="b")
    Agent.objects.create(director=director, order=0, name="A", slug="a")
    Agent.objects.create(director=director, order=2, name="Off", slug="off", enabled=False)
    enabled = PreparedQuery(
        Agent, lambda director_id: Agent.objects.filter(director_id=director_id, enabled=True), "director_id"
    )
    assert [agent.slug for agent in enabled(director_id=director.pk)] == ["a", "b"]  # Meta ordering kept
    assert enabled(director_id=director.pk + 1000) == []


def test_a_value_that_does_not_reach_the_parameters_unchanged_is_refused(user: Any) -> None:
    by_name = PreparedQuery(Director, lambda name: Director.objects.filter(name__icontains=name), "name")
    with pytest.raises(TypeError, match="did not reach the SQL parameters"):
        by_name(name=1)
    by_id = PreparedQuery(Director, lambda director_id: Director.objects.filter(pk=director_id), "director_id")
    with pytest.raises(TypeError, match="must be an int"):
        by_id(director_id="1")


def test_memory_search_returns_what_the_orm_query_returns_for_every_shape(user: Any) -> None:
    from apps.orchestration.models import Memory
    from apps.orchestration.tools.memory import _prepared_search, _search_queryset, find_memories

    director = Director.objects.create(owner=user, name="Memories")
    agents = [Agent.objects.create(director=director, order=n, name=f"A{n}", slug=f"a{n}") for n in range(2)]
    contents = ["50% off for Client_7", "500 off for ClientX7", "client seven: back\\slash", "Tone: formal", "Ünïcode"]
    for n, content in enumerate(contents * 2):
        scope = ("local", "shared", "global")[n % 3]
        Memory.objects.create(
            owner=user,
            scope=scope,
            director=None if scope == "global" else director,
            agent=agents[n % 2] if scope == "local" and n % 4 else None,
            content=content,
        )
    queries = ["", "client", "50%", "client_7", "back\\slash", "CLIENT 7", "%", "_", "ünï", "x y z w v u t s"]
    for by_agent in (False, True):
        for access in (True, False):
            for scope in ("", "local", "shared"):
                for owner in (None, "director", "a1"):
                    for query in queries:
                        words = query.split()
                        values: dict[str, Any] = {"owner_id": user.pk}
                        if not by_agent or access:
                            values["director_id"] = director.pk
                        if by_agent:
                            values["agent_id"] = agents[1].pk
                        if scope:
                            values["scope"] = scope
                        kind = "" if owner is None else "director" if owner == "director" else "agent"
                        if kind == "agent":
                            values["owner_slug"] = owner
                        limited = not words
                        visible = list(
                            _search_queryset(memory_access=access, owner_kind=kind, limited=limited, **values)
                        )
                        prepared = _prepared_search((by_agent, access, bool(scope), kind, limited))(**values)
                        assert [m.pk for m in prepared] == [m.pk for m in visible], (by_agent, access, scope, owner)
                        assert [m.tags for m in prepared] == [m.tags for m in visible]
                        # The words are matched in Python over the decrypted content (encrypted at rest).
                        expected = [m for m in visible if all(w.casefold() in m.content.casefold() for w in words)]
                        got = find_memories(
                            by_agent=by_agent, memory_access=access, owner_kind=kind, words=words, **values
                        )
                        assert [m.pk for m in got] == [m.pk for m in expected], (by_agent, access, scope, owner, query)
    percent = find_memories(
        by_agent=False, memory_access=True, owner_kind="", words=["50%"], owner_id=user.pk, director_id=director.pk
    )
    assert {m.content for m in percent} == {"50% off for Client_7"}  # % is a character, not a wildcard


def test_the_closing_log_counts_live_workspace_items(user: Any) -> None:
    from apps.orchestration.engine import _LIVE_ITEMS
    from apps.workspaces import actions as workspace_actions

    def open_one(title: str) -> Any:
        return workspace_actions.open_workspace(
            owner=user, run_id=None, message_id=None, director_id=None, director_name="D", title=title
        )

    empty, full = open_one("empty"), open_one("full")
    items = [workspace_actions.add_item(workspace=full, data=f"item {n}", label=f"L{n}") for n in range(3)]
    workspace_actions.remove_item(item_id=items[0].pk, workspace=full, hard=False, actor={"user": "test"})
    assert _LIVE_ITEMS(workspace_id=empty.pk) == []  # no group: the engine reads 0
    assert _LIVE_ITEMS(workspace_id=full.pk) == [2] == [full.items.filter(deleted=False).count()]


def test_the_prepared_workspace_listing_is_the_selectors_listing(user: Any) -> None:
    from apps.orchestration.tools.workspace import _LISTINGS
    from apps.workspaces import actions as workspace_actions
    from apps.workspaces import selectors as workspace_selectors

    spaces = [
        workspace_actions.open_workspace(
            owner=user, run_id=None, message_id=None, director_id=None, director_name="D", title=title
        )
        for title in ("one", "two")
    ]
    for space in spaces:
        items = [workspace_actions.add_item(workspace=space, data=f"{space.title} {n}", label=f"{n}") for n in range(4)]
        workspace_actions.remove_item(item_id=items[1].pk, workspace=space, hard=False, actor={"user": "test"})
    for space in spaces:
        for include_deleted in (False, True):
            expected = list(workspace_selectors.list_items(workspace=space, include_deleted=include_deleted)[:200])
            got = _LISTINGS[include_deleted](workspace_id=space.pk)
            assert [(i.pk, i.label, i.deleted, i.tags) for i in got] == [
                (i.pk, i.label, i.deleted, i.tags) for i in expected
            ]
            assert len(got) == (4 if include_deleted else 3)
