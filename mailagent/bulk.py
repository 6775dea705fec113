"""A lean bulk INSERT for the ingest path (the mail store and the search index write thousands of rows a batch).

`QuerySet.bulk_create` builds a model instance per row and compiles every value through the generic SQL
compiler, ~150 µs a row on a model with two dozen columns: more than SQLite needs to store the row. Here
the same rows go out as one `INSERT … VALUES (…), (…) RETURNING pk` per batch:

- `insert_values(Model, rows)` takes plain dicts keyed by attname (`thread_id`, not `thread`) and returns
  the new primary keys; a missing field gets its default and auto_now/auto_now_add fields get the current
  time, as a new instance saved by bulk_create would.
- `insert_rows(objs)` takes unsaved instances and sets their primary keys, like `bulk_create(objs)`.

Plain values of plain fields (a str for a Char/TextField, an int for an integer field or foreign key, a
bool for a BooleanField, None) go to the driver as they are, which is what those fields' own preparation
returns; a list/dict for a JSONField and an aware datetime for a DateTimeField go straight to the backend's
adapt_json_value / adapt_datetimefield_value, the last step of their preparation. Every other value goes
through the field's `get_db_prep_save`, exactly as bulk_create does it. Anything unusual (preset primary
keys, expressions, db_default, a database without RETURNING) falls back to bulk_create.
"""

from __future__ import annotations

import datetime as dt
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.db import connections, models, router, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.fields import NOT_PROVIDED
from django.utils import timezone

_PLAIN_TEXT: frozenset[type[models.Field[Any, Any]]] = frozenset({models.CharField, models.TextField})
_PLAIN_INT: frozenset[type[models.Field[Any, Any]]] = frozenset(
    {
        models.IntegerField,
        models.BigIntegerField,
        models.SmallIntegerField,
        models.PositiveIntegerField,
        models.PositiveBigIntegerField,
        models.PositiveSmallIntegerField,
        models.ForeignKey,
    }
)

Prepare = Callable[[Any], Any]


class _UseBulkCreate(Exception):
    """A value this fast path does not handle (an expression such as a database default)."""


def _preparer(field: models.Field[Any, Any], connection: BaseDatabaseWrapper) -> Prepare:
    """value → what the driver gets, the same as `field.get_db_prep_save(value, connection)`."""
    kind = type(field)

    def generic(value: Any) -> Any:
        if hasattr(value, "resolve_expression"):
            raise _UseBulkCreate
        return field.get_db_prep_save(value, connection=connection)

    if kind in _PLAIN_TEXT:
        return lambda value: value if value is None or isinstance(value, str) else generic(value)
    if kind in _PLAIN_INT:
        return lambda value: value if value is None or type(value) is int else generic(value)
    if kind is models.BooleanField:
        return lambda value: value if value is None or type(value) is bool else generic(value)
    if kind is models.JSONField:
        encoder = field.encoder  # type: ignore[attr-defined]
        return lambda value: (
            connection.ops.adapt_json_value(value, encoder) if type(value) in (list, dict) else generic(value)
        )
    if kind is models.DateTimeField:
        return lambda value: (
            connection.ops.adapt_datetimefield_value(value)
            if type(value) is dt.datetime and value.utcoffset() is not None
            else generic(value)
        )
    return generic


def _auto_now(field: models.Field[Any, Any]) -> bool:
    return bool(getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False))


class _Insert:
    """The statement shape for one model on one database connection, built once (see `_insert_for`)."""

    def __init__(self, model: type[models.Model], alias: str, connection: BaseDatabaseWrapper) -> None:
        self.model = model
        self.alias = alias
        self.connection = connection
        pk = model._meta.pk
        assert pk is not None and pk.column is not None
        self.pk = pk
        self.fields = [field for field in model._meta.concrete_fields if field is not pk]
        self.usable = bool(connection.features.can_return_rows_from_bulk_insert) and isinstance(
            pk, models.AutoField | models.BigAutoField | models.SmallAutoField
        )
        self.has_db_default = any(field.db_default is not NOT_PROVIDED for field in self.fields)
        self.preparers = [_preparer(field, connection) for field in self.fields]
        self.plan = list(zip(self.fields, self.preparers, strict=True))
        self.value_plan = [
            (field.attname, prepare, _auto_now(field), field.get_default)
            for field, prepare in zip(self.fields, self.preparers, strict=True)
        ]
        quote = connection.ops.quote_name
        self.head = (
            f"INSERT INTO {quote(model._meta.db_table)} "  # noqa: S608
            f"({', '.join(quote(str(field.column)) for field in self.fields)}) VALUES "
        )
        self.placeholder = "(" + ", ".join(["%s"] * len(self.fields)) + ")"
        self.returning = f" RETURNING {quote(str(pk.column))}"
        self.statements: dict[int, str] = {}  # rows in the statement -> SQL

    def statement(self, count: int) -> str:
        sql = self.statements.get(count)
        if sql is None:
            sql = self.head + ", ".join([self.placeholder] * count) + self.returning
            if len(self.statements) < 64:
                self.statements[count] = sql
        return sql

    def execute(self, rows: list[list[Any]], batch_size: int) -> list[Any]:
        # The backend's limit (SQLite asks the connection for it) only matters for more than one row a statement.
        size = 1 if len(rows) == 1 else max(1, min(batch_size, self.connection.ops.bulk_batch_size(self.fields, rows)))
        pks: list[Any] = []
        with transaction.atomic(using=self.alias, savepoint=False), self.connection.cursor() as cursor:
            for start in range(0, len(rows), size):
                chunk = rows[start : start + size]
                cursor.execute(self.statement(len(chunk)), [value for row in chunk for value in row])
                returned = cursor.fetchall()
                if len(returned) != len(chunk):
                    raise RuntimeError(f"{self.model._meta.label}: {len(chunk)} rows inserted, {len(returned)} ids")
                pks.extend(row[0] for row in returned)
        return pks


# One _Insert per (connection, model): Django's connections are per thread, and the preparers use the
# connection's operations, so the shapes live with the connection object and go away with it.
_shapes: weakref.WeakKeyDictionary[BaseDatabaseWrapper, dict[type[models.Model], _Insert]] = weakref.WeakKeyDictionary()
_shapes_lock = threading.Lock()


def _insert_for(model: type[models.Model]) -> _Insert:
    alias = router.db_for_write(model)
    connection = connections[alias]
    with _shapes_lock:
        per_connection = _shapes.get(connection)
        if per_connection is None:
            per_connection = _shapes[connection] = {}
    insert = per_connection.get(model)
    if insert is None:
        insert = per_connection[model] = _Insert(model, alias, connection)
    return insert


def insert_values(model: type[models.Model], rows: Sequence[Mapping[str, Any]], *, batch_size: int = 500) -> list[Any]:
    """Insert new rows given as {attname: value} and return their primary keys, in order."""
    if not rows:
        return []
    insert = _insert_for(model)
    known = {field.attname for field in insert.fields}
    unknown = {key for row in rows for key in row} - known
    if unknown:
        raise TypeError(f"{model._meta.label} has no fields {sorted(unknown)}")
    if not insert.usable or insert.has_db_default:
        return _bulk_create([model(**row) for row in rows], batch_size)
    plan = insert.value_plan
    prepared: list[list[Any]] = []
    try:
        for row in rows:
            values: list[Any] = []
            for attname, prepare, auto_now, default in plan:
                if auto_now:
                    value = timezone.now()
                elif attname in row:
                    value = row[attname]
                else:
                    value = default()
                values.append(prepare(value))
            prepared.append(values)
    except _UseBulkCreate:
        return _bulk_create([model(**row) for row in rows], batch_size)
    return insert.execute(prepared, batch_size)


def insert_rows(objs: Sequence[models.Model], *, batch_size: int = 500) -> None:
    """Insert new rows of one model and set their primary keys (like `bulk_create(objs)` without options)."""
    if not objs:
        return
    model = type(objs[0])
    insert = _insert_for(model)
    if not insert.usable or any(type(obj) is not model or obj.pk is not None for obj in objs):
        _bulk_create(objs, batch_size)
        return
    plan = insert.plan
    prepared: list[list[Any]] = []
    try:
        for obj in objs:
            obj._prepare_related_fields_for_save(operation_name="bulk_create")  # type: ignore[attr-defined]
            prepared.append([prepare(field.pre_save(obj, True)) for field, prepare in plan])
    except _UseBulkCreate:
        _bulk_create(objs, batch_size)
        return
    for obj, pk in zip(objs, insert.execute(prepared, batch_size), strict=True):
        obj.pk = pk
        obj._state.adding = False
        obj._state.db = insert.alias


def _bulk_create(objs: Sequence[models.Model], batch_size: int) -> list[Any]:
    model = type(objs[0])
    created = model._default_manager.db_manager(router.db_for_write(model)).bulk_create(
        list(objs), batch_size=batch_size
    )
    return [obj.pk for obj in created]
