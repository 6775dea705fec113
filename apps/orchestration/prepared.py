"""Querysets of a director run's hot path, compiled to SQL once per database connection.

Building and compiling a queryset costs Django 0.3 to 1.7 ms each time (the run's claim with its director,
API config, prompt, owner and message in one SELECT is the dearest), several times the SQLite query itself.
The shape of these queries never changes, only an id or two: `PreparedQuery` compiles the queryset once with
marker values, remembers where each marker landed in the parameters, and afterwards runs the same SQL with
the real values. Rows come back exactly as the queryset would return them: the compiler's own converters
(decryption, JSON, datetimes) and, for model querysets, `from_db` plus the select_related populators, as
Django's ModelIterable does.

Integer values (ids) are bound as they are. Text values (`texts=`) are bound as the lookup prepared the
marker: unchanged for an exact match, LIKE-escaped inside the pattern for contains/icontains/startswith…
(found by where the marker, which carries `%`, `_` and a backslash, landed). A marker that does not reach the
parameters in one of those forms is a programming error raised at the first call.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import connections, models, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import QuerySet
from django.db.models import query as django_query
from django.db.models.query import (
    DEFAULT_FETCH_MODE,
    FlatValuesListIterable,
    ModelIterable,
    ValuesListIterable,
    get_related_populators,
)

# Within every backend's integer range (PostgreSQL's integer included, positive for PositiveIntegerFields)
# and unlike any id or literal these queries carry.
_MARKER_BASE = 2_147_480_000


@dataclass(slots=True)
class _Compiled:
    sql: str
    params: list[Any]
    slots: list[tuple[int, str, str, str, bool]]  # (position, value name, prefix, suffix, LIKE-escaped)
    compiler: Any
    converters: dict[int, Any]
    kind: str  # "model", "tuple" or "flat"
    from_db: Any = None
    init_list: list[str] | None = None
    model_slice: slice | None = None
    populators: list[Any] | None = None
    annotations: dict[str, int] | None = None


class PreparedQuery[T]:
    def __init__(
        self,
        model: type[models.Model],
        build: Callable[..., QuerySet[Any, T]],
        *names: str,
        texts: tuple[str, ...] = (),
    ) -> None:
        self.model = model
        self.build = build
        self.names = names
        self.texts = texts
        self._compiled: weakref.WeakKeyDictionary[BaseDatabaseWrapper, _Compiled] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def _compile(self, connection: BaseDatabaseWrapper, alias: str) -> _Compiled:
        markers: dict[str, Any] = {name: _MARKER_BASE + index for index, name in enumerate(self.names)}
        markers.update({name: f"Zq{index}%_\\Zq" for index, name in enumerate(self.texts)})
        queryset = self.build(**markers)
        if queryset._known_related_objects or queryset._prefetch_related_lookups:  # type: ignore[attr-defined]
            raise TypeError("a prepared query cannot use related managers or prefetch_related")
        compiler = queryset.query.get_compiler(using=alias, connection=connection)
        sql, params = compiler.as_sql()
        params = list(params)
        slots: list[tuple[int, str, str, str, bool]] = []
        for position, value in enumerate(params):
            if type(value) is int:
                slots += [(position, name, "", "", False) for name in self.names if markers[name] == value]
            elif isinstance(value, str):
                for name in self.texts:
                    for escaped, form in (
                        (False, markers[name]),
                        (True, connection.ops.prep_for_like_query(markers[name])),
                    ):
                        if form in value:
                            prefix, _, suffix = value.partition(form)
                            slots.append((position, name, prefix, suffix, escaped))
                            break
        missing = {*self.names, *self.texts} - {slot[1] for slot in slots}
        if missing or len({slot[0] for slot in slots}) != len(slots):
            raise TypeError(f"prepared query: {sorted(missing) or 'a value'} did not reach the SQL parameters as is")
        fields = [s[0] for s in compiler.select[0 : compiler.col_count]]
        compiled = _Compiled(
            sql=sql, params=params, slots=slots, compiler=compiler, converters=compiler.get_converters(fields), kind=""
        )
        iterable = queryset._iterable_class
        if iterable is ModelIterable:
            klass_info = compiler.klass_info
            select_fields = klass_info["select_fields"]
            start, end = select_fields[0], select_fields[-1] + 1
            compiled.kind = "model"
            compiled.from_db = django_query._get_from_db(  # type: ignore[attr-defined]
                klass_info["model"], DEFAULT_FETCH_MODE
            )
            compiled.init_list = [f[0].target.attname for f in compiler.select[start:end]]
            compiled.model_slice = slice(start, end)
            compiled.populators = get_related_populators(klass_info, compiler.select, alias, DEFAULT_FETCH_MODE)
            compiled.annotations = dict(compiler.annotation_col_map or {})
        elif iterable is ValuesListIterable:
            compiled.kind = "tuple"
        elif iterable is FlatValuesListIterable:
            compiled.kind = "flat"
        else:
            raise TypeError(f"prepared query: {iterable.__name__} results are not supported")
        return compiled

    def __call__(self, **values: Any) -> list[T]:
        using = router.db_for_read(self.model)
        connection = connections[using]
        compiled = self._compiled.get(connection)
        if compiled is None:
            with self._lock:
                compiled = self._compiled[connection] = self._compile(connection, using)
        params = list(compiled.params)
        for position, name, prefix, suffix, escaped in compiled.slots:
            value = values[name]
            if name in self.texts:
                if not isinstance(value, str):
                    raise TypeError(f"prepared query: {name} must be a str, not {type(value).__name__}")
                params[position] = prefix + (connection.ops.prep_for_like_query(value) if escaped else value) + suffix
            elif type(value) is not int:
                raise TypeError(f"prepared query: {name} must be an int, not {type(value).__name__}")
            else:
                params[position] = value
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            rows: Any = cursor.fetchall()
        compiler = compiled.compiler
        if compiler.has_extra_select:
            rows = [row[: compiler.col_count] for row in rows]
        if compiled.converters:
            rows = compiler.apply_converters(rows, compiled.converters)
        if compiled.kind == "flat":
            return [row[0] for row in rows]
        if compiled.kind == "tuple":
            return [tuple(row) for row in rows]  # type: ignore[misc]
        found: list[Any] = []
        assert compiled.model_slice is not None and compiled.populators is not None
        for row in rows:
            obj = compiled.from_db(using, compiled.init_list, row[compiled.model_slice])
            for populator in compiled.populators:
                populator.populate(row, obj)
            for attr_name, position in (compiled.annotations or {}).items():
                setattr(obj, attr_name, row[position])
            found.append(obj)
        return found
