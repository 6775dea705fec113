"""Django's SQLite backend with a per-process pool of idle connections.

Django opens a connection per thread and, with CONN_MAX_AGE 0, closes it when the request ends; under ASGI
every request runs its synchronous code in a new thread, so every request opened a new SQLite connection.
A new connection costs ~3 ms of CPU before its first row (SQLite parses the whole schema, 261 tables,
indexes and triggers, on the first statement) and starts with an empty page cache, so each request also
re-read every page it touched. Here `close()` hands an idle connection (autocommit, no open transaction) to
a pool and the next `connect()` takes it back: the schema stays parsed and the page cache warm.

A pooled connection holds no transaction, so it never pins an old snapshot: its next statement sees every
commit. A connection is only reused for the same file: when the path now names another file (the database
was deleted and created again), the pooled connections of the old one are closed instead.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from typing import Any

from django.db.backends.sqlite3 import base

MAX_IDLE = 16  # idle connections kept per database file; more are closed

_pool: dict[str, list[tuple[int, sqlite3.Connection]]] = {}
_pool_lock = threading.Lock()


def _file_id(name: str) -> int | None:
    """The inode of the database file (None for an in-memory or missing database)."""
    if not name or name == ":memory:" or name.startswith("file:"):
        return None
    try:
        return os.stat(name).st_ino
    except OSError:
        return None


def _checkout(name: str) -> sqlite3.Connection | None:
    file_id = _file_id(name)
    if file_id is None:
        return None
    stale: list[sqlite3.Connection] = []
    found: sqlite3.Connection | None = None
    with _pool_lock:
        idle = _pool.get(name, [])
        while idle:
            pooled_id, connection = idle.pop()
            if pooled_id == file_id:
                found = connection
                break
            stale.append(connection)
    for connection in stale:
        # No checkpoint on close: a checkpoint would write this connection's log to the file it has open and
        # then delete the -wal file by name, which now belongs to the database at that path.
        connection.setconfig(sqlite3.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, True)
        connection.close()
    return found


def _checkin(name: str, connection: sqlite3.Connection) -> bool:
    """Keep `connection` for reuse; False when it must be closed instead."""
    if connection.in_transaction:
        return False
    file_id = _file_id(name)
    if file_id is None:
        return False
    with _pool_lock:
        idle = _pool.setdefault(name, [])
        if len(idle) >= MAX_IDLE:
            return False
        idle.append((file_id, connection))
    return True


def close_pooled_connections() -> None:
    """Close every idle pooled connection of this process."""
    with _pool_lock:
        idle = [connection for connections in _pool.values() for _file, connection in connections]
        _pool.clear()
    for connection in idle:
        connection.close()


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        name = str(conn_params.get("database", ""))
        connection = _checkout(name)
        if connection is None:
            return super().get_new_connection(conn_params)
        # What Django sets on a new connection (a migration may have left foreign keys off on an error).
        connection.execute("PRAGMA foreign_keys = ON")
        connection.execute("PRAGMA legacy_alter_table = OFF")
        return connection

    def _close(self) -> None:
        if self.connection is None:
            return
        name = str(self.settings_dict["NAME"])
        with self.wrap_database_errors:
            if not (not self.is_in_memory_db() and _checkin(name, self.connection)):
                self.connection.close()
