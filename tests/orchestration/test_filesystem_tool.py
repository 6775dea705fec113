"""Filesystem tools under hostile layouts: over-long paths, huge trees, hard links and symlinks.

The probe found: a 5,000-character path raised an uncaught ENAMETOOLONG; the search's file limit only
left the inner loop (15,314 directories walked under /usr); a hard link inside the root read a file
outside it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from apps.llm import ToolFailure
from apps.orchestration.engine import RunEngine
from apps.orchestration.models import Conversation, FilesystemRoot, OrchestrationSettings, Run, ThreadKind
from apps.orchestration.selectors import filesystem_root_for_owner
from apps.orchestration.tools import filesystem
from apps.orchestration.tools.context import Actor
from apps.orchestration.tools.schemas import FilesystemRetrieveArgs, FilesystemSearchArgs
from tests.fakes.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def engine(client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI) -> RunEngine:
    fake_llm.default = Reply.text("ok")
    run = Run.objects.get(message=store_mail(subject="files", sender="client1@domain.com"))
    fake_llm.default = None
    engine = RunEngine(run)
    engine.ctx.director_thread = Conversation.objects.create(run=run, kind=ThreadKind.DIRECTOR, director=run.director)
    return engine


@pytest.fixture
def root(tmp_path: Path, engine: RunEngine) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    (folder / "readme.txt").write_text("inside the root")
    FilesystemRoot.objects.update_or_create(owner_id=engine.director.owner_id, defaults={"path": str(folder)})
    engine.ctx.settings = OrchestrationSettings.objects.get_or_create(pk=1)[0]
    engine.ctx.virtual_root = filesystem_root_for_owner(owner_id=engine.director.owner_id)
    return folder


def actor(engine: RunEngine) -> Actor:
    assert engine.ctx.director_thread is not None
    return Actor(kind="director", thread=engine.ctx.director_thread)


def retrieve(engine: RunEngine, path: str) -> dict[str, Any]:
    return filesystem.retrieve(engine.ctx, actor(engine), FilesystemRetrieveArgs(filePath=path))


def search(engine: RunEngine, query: str) -> dict[str, Any]:
    return filesystem.search(engine.ctx, actor(engine), FilesystemSearchArgs(query=query))


def test_a_five_thousand_character_path_is_a_clear_tool_error(engine: RunEngine, root: Path) -> None:
    with pytest.raises(ToolFailure, match="the path is 5000 characters long; paths are at most 1024"):
        retrieve(engine, "a" * 5000)
    with pytest.raises(ToolFailure, match="longer than 255 bytes"):
        retrieve(engine, "b" * 300)
    # Within the caps but nothing there: a plain "no file", whatever the depth.
    deep = "/".join(["d" * 100] * 10)
    with pytest.raises(ToolFailure, match=r"^no file"):
        retrieve(engine, deep)
    assert retrieve(engine, "readme.txt")["text"] == "inside the root"


def test_a_hard_link_to_a_file_outside_the_root_is_neither_read_nor_listed(
    engine: RunEngine, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "server-secret.txt"
    outside.write_text("the server's secret key")
    os.link(outside, root / "innocent.txt")
    with pytest.raises(ToolFailure, match="has 2 hard links, and the others may be outside the virtual root"):
        retrieve(engine, "innocent.txt")
    assert search(engine, "innocent")["files"] == []
    assert search(engine, "secret key")["files"] == []
    # Two links both inside the root are refused the same way: the rule cannot see where other names are.
    os.link(root / "readme.txt", root / "readme-copy.txt")
    with pytest.raises(ToolFailure, match="hard links"):
        retrieve(engine, "readme.txt")


def test_symlinks_inside_the_root_work_and_never_lead_out(engine: RunEngine, root: Path, tmp_path: Path) -> None:
    (root / "docs").mkdir()
    (root / "docs" / "plan.txt").write_text("the plan")
    os.symlink(root / "docs", root / "shortcut")
    (tmp_path / "outside.txt").write_text("not yours")
    os.symlink(tmp_path, root / "up")
    assert retrieve(engine, "shortcut/plan.txt")["text"] == "the plan"
    with pytest.raises(ToolFailure, match="leads outside the virtual root"):
        retrieve(engine, "up/outside.txt")
    os.symlink(root / "loop", root / "loop")
    with pytest.raises(ToolFailure, match="a symbolic link in the path loops"):
        retrieve(engine, "loop")


def test_the_file_limit_ends_the_whole_walk(engine: RunEngine, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The time budget is a safety net; on a loaded machine it could end this walk first.
    monkeypatch.setattr(filesystem, "SEARCH_TIME_BUDGET_SECONDS", 600.0)
    crowded = root / "a-crowded"
    crowded.mkdir()
    for index in range(filesystem.SEARCH_FILE_LIMIT + 1):
        (crowded / f"f{index:05d}").touch()
    for index in range(300):  # walked after the crowded folder, in sorted order
        (root / f"b-{index:03d}").mkdir()
    answer = search(engine, "nothing matches this")
    assert answer["incomplete"].startswith(f"search stopped after {filesystem.SEARCH_FILE_LIMIT} files")
    assert answer["scanned"] == {"files": filesystem.SEARCH_FILE_LIMIT, "directories": 2}


def test_the_directory_limit_ends_the_walk(engine: RunEngine, root: Path) -> None:
    for index in range(filesystem.SEARCH_DIRECTORY_LIMIT + 50):
        (root / f"d{index:05d}").mkdir()
    answer = search(engine, "readme")
    assert answer["incomplete"] == (
        f"search stopped after {filesystem.SEARCH_DIRECTORY_LIMIT} directories; "
        "narrow the query or search a smaller folder"
    )
    assert answer["files"] == [{"filePath": "readme.txt", "size": 15}]


def test_a_complete_search_says_nothing_about_limits(engine: RunEngine, root: Path) -> None:
    answer = search(engine, "readme")
    assert "incomplete" not in answer
    assert answer == {
        "files": [{"filePath": "readme.txt", "size": 15}],
        "total": 1,
        "scanned": {"files": 1, "directories": 1},
    }
