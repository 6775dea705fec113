"""mailagent.sqlite: idle SQLite connections are reused across Django connection wrappers (requests), never
inside a transaction, never for another file, and always see the latest commits."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

from mailagent import settings as project_settings
from mailagent.sqlite import base as pool


@pytest.fixture
def database(tmp_path: Path, django_db_blocker: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A fresh database file (not the test database) and a factory of connection wrappers on it with the
    settings the project gives SQLite (also in the PostgreSQL pass, whose default database is not SQLite)."""
    path = tmp_path / "pool.sqlite3"
    sqlite3.connect(path).executescript("PRAGMA journal_mode=WAL; CREATE TABLE probe (x INTEGER);").close()
    monkeypatch.delenv("DATABASE_URL", raising=False)
    sqlite_config = project_settings._database_config()
    settings_dict = {**connections.settings["default"], **sqlite_config, "NAME": str(path)}
    assert settings_dict["ENGINE"] == "mailagent.sqlite"
    wrappers: list[pool.DatabaseWrapper] = []

    def open_wrapper() -> pool.DatabaseWrapper:
        wrapper = pool.DatabaseWrapper(dict(settings_dict), alias="pool-test")
        wrapper.ensure_connection()
        wrappers.append(wrapper)
        return wrapper

    with django_db_blocker.unblock():
        yield path, open_wrapper
        for wrapper in wrappers:
            wrapper.close()
    pool.close_pooled_connections()


def test_a_closed_connection_is_reused_with_its_schema_and_sees_later_commits(database: Any) -> None:
    path, open_wrapper = database
    first = open_wrapper()
    raw = first.connection
    first.close()

    writer = sqlite3.connect(path)
    writer.execute("INSERT INTO probe VALUES (42)")
    writer.commit()
    writer.close()

    second = open_wrapper()
    assert second.connection is raw
    with second.cursor() as cursor:
        cursor.execute("SELECT x FROM probe")
        assert cursor.fetchall() == [(42,)]
        cursor.execute("PRAGMA foreign_keys")
        assert cursor.fetchone() == (1,)
    assert second.get_autocommit()


def test_a_connection_closed_inside_a_transaction_is_not_reused(database: Any) -> None:
    _path, open_wrapper = database
    first = open_wrapper()
    raw = first.connection
    raw.execute("BEGIN")
    raw.execute("INSERT INTO probe VALUES (1)")
    first.close()
    with pytest.raises(sqlite3.ProgrammingError):
        raw.execute("SELECT 1")  # closed, and its transaction rolled back with it
    second = open_wrapper()
    assert second.connection is not raw
    with second.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM probe")
        assert cursor.fetchone() == (0,)


def test_a_deleted_and_recreated_database_gets_new_connections(database: Any) -> None:
    path, open_wrapper = database
    first = open_wrapper()
    raw = first.connection
    first.close()

    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    recreated = sqlite3.connect(path)
    recreated.executescript("PRAGMA journal_mode=WAL; CREATE TABLE probe (x INTEGER); INSERT INTO probe VALUES (7);")

    second = open_wrapper()
    assert second.connection is not raw
    with second.cursor() as cursor:
        cursor.execute("SELECT x FROM probe")
        assert cursor.fetchall() == [(7,)]
    with pytest.raises(sqlite3.ProgrammingError):
        raw.execute("SELECT 1")  # the old file's idle connection was closed
    second.close()
    recreated.close()
    pool.close_pooled_connections()
    assert sqlite3.connect(path).execute("SELECT x FROM probe").fetchall() == [(7,)]


def test_idle_connections_are_capped(database: Any) -> None:
    _path, open_wrapper = database
    wrappers = [open_wrapper() for _ in range(pool.MAX_IDLE + 3)]
    raws = [wrapper.connection for wrapper in wrappers]
    for wrapper in wrappers:
        wrapper.close()
    closed = 0
    for raw in raws:
        try:
            raw.execute("SELECT 1")
        except sqlite3.ProgrammingError:
            closed += 1
    assert closed == 3
