"""The filesystem tools' directory is per owner: each owner's runs read only their own root."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from apps.accounts.actions import create_local_account
from apps.llm import ToolFailure
from apps.orchestration.actions import create_director
from apps.orchestration.engine import RunEngine
from apps.orchestration.models import Conversation, FilesystemRoot, Run, ThreadKind
from apps.orchestration.selectors import default_filesystem_root, filesystem_root_for_owner
from apps.orchestration.tools import filesystem
from apps.orchestration.tools.context import Actor
from apps.orchestration.tools.registry import available_live_tools
from apps.orchestration.tools.schemas import FilesystemRetrieveArgs, FilesystemSearchArgs

pytestmark = pytest.mark.django_db


def _engine_for(owner: Any, store_mail: Any, add_filter: Any) -> RunEngine:
    director = create_director(owner=owner, name=f"Files of {owner.username}")
    add_filter(director, "subject", "files")
    account = create_local_account(owner=owner, name=f"inbox-{owner.pk}", address=f"{owner.username}@example.com")
    message = store_mail(subject="files please", target=account)
    engine = RunEngine(Run.objects.get(message=message, director=director))
    engine.ctx.director_thread = Conversation.objects.create(
        run=engine.run, kind=ThreadKind.DIRECTOR, director=director
    )
    return engine


def test_the_default_root_is_per_owner_under_the_data_dir(user: Any, settings: Any, tmp_path: Path) -> None:
    settings.DATA_DIR = tmp_path
    assert filesystem_root_for_owner(owner_id=user.pk) == str(tmp_path / "files" / str(user.pk))
    FilesystemRoot.objects.create(owner=user, path="  ")
    assert filesystem_root_for_owner(owner_id=user.pk) == str(default_filesystem_root(owner_id=user.pk))
    FilesystemRoot.objects.filter(owner=user).update(path="/srv/client-docs")
    assert filesystem_root_for_owner(owner_id=user.pk) == "/srv/client-docs"


def test_each_owners_run_reads_only_their_own_root(
    user: Any, store_mail: Any, add_filter: Any, settings: Any, tmp_path: Path
) -> None:
    settings.DATA_DIR = tmp_path
    other = get_user_model().objects.create_user(username="other", email="other@example.com", password="x" * 20)
    mine = default_filesystem_root(owner_id=user.pk)
    mine.mkdir(parents=True)
    (mine / "contract.txt").write_text("my contract")
    theirs = tmp_path / "elsewhere"
    theirs.mkdir()
    (theirs / "their-notes.txt").write_text("their notes")
    FilesystemRoot.objects.create(owner=other, path=str(theirs))

    my_engine = _engine_for(user, store_mail, add_filter)
    their_engine = _engine_for(other, store_mail, add_filter)
    assert my_engine.ctx.virtual_root == str(mine) and their_engine.ctx.virtual_root == str(theirs)

    me = Actor(kind="director", thread=my_engine.ctx.director_thread)  # type: ignore[arg-type]
    them = Actor(kind="director", thread=their_engine.ctx.director_thread)  # type: ignore[arg-type]
    found = filesystem.search(my_engine.ctx, me, FilesystemSearchArgs(query="t"))
    assert [f["filePath"] for f in found["files"]] == ["contract.txt"]
    found = filesystem.search(their_engine.ctx, them, FilesystemSearchArgs(query="t"))
    assert [f["filePath"] for f in found["files"]] == ["their-notes.txt"]
    with pytest.raises(ToolFailure):
        filesystem.retrieve(their_engine.ctx, them, FilesystemRetrieveArgs(filePath="contract.txt"))


def test_tools_are_offered_only_while_the_owners_root_exists(
    user: Any, store_mail: Any, add_filter: Any, settings: Any, tmp_path: Path
) -> None:
    settings.DATA_DIR = tmp_path
    engine = _engine_for(user, store_mail, add_filter)
    assert "filesystem_search" not in available_live_tools(engine.ctx)
    default_filesystem_root(owner_id=user.pk).mkdir(parents=True)
    engine.ctx.cache.clear()
    assert {"filesystem_search", "filesystem_retrieve"} <= set(available_live_tools(engine.ctx))


@pytest.mark.django_db(transaction=True)
def test_the_old_global_root_becomes_each_director_owners_root(user: Any) -> None:
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    other = get_user_model().objects.create_user(username="other", email="other@example.com", password="x" * 20)
    nobody = get_user_model().objects.create_user(username="nobody", email="nobody@example.com", password="x" * 20)
    executor = MigrationExecutor(connection)
    before = [("orchestration", "0001_initial")]
    # Every app's leaf, not only orchestration's: going back to orchestration 0001 also unapplies apps.llm's
    # migrations, and one that no orchestration migration depends on would otherwise stay unapplied.
    latest = executor.loader.graph.leaf_nodes()
    try:
        executor.migrate(before)
        old_apps = executor.loader.project_state(before).apps
        old_apps.get_model("orchestration", "OrchestrationSettings").objects.update_or_create(
            pk=1, defaults={"virtual_root": "/srv/shared-docs"}
        )
        old_director = old_apps.get_model("orchestration", "Director")
        for owner in (user, other):
            old_director.objects.create(owner_id=owner.pk, name="d")
        executor = MigrationExecutor(connection)
        executor.migrate(latest)
    finally:
        MigrationExecutor(connection).migrate(latest)
    roots = dict(FilesystemRoot.objects.values_list("owner_id", "path"))
    assert roots == {user.pk: "/srv/shared-docs", other.pk: "/srv/shared-docs"}
    assert filesystem_root_for_owner(owner_id=nobody.pk).endswith(f"files/{nobody.pk}")
