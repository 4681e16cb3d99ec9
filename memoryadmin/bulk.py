"""Bulk writes through PostgreSQL's COPY, and bulk reads as plain tuples, for the few places
that move thousands of rows.

Django's `bulk_create` compiles one placeholder per value and psycopg splits that query in
Python: 10,000 mirrored chunks spent 2-3 s there. COPY sends rows that psycopg formats in C.
Other databases (SQLite, the embedded default) keep `bulk_create`.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

import orjson
from django.core.exceptions import EmptyResultSet
from django.db import IntegrityError, connection, models, transaction
from django.db.models import QuerySet

_cursor_names = itertools.count()


def copy_rows(
    model: type[models.Model],
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    conflict: str | None = None,
    params: Sequence[Any] = (),
) -> list[tuple[Any, ...]]:
    """PostgreSQL only. COPY `rows` (values for `columns`, as the database takes them) into
    the model's table; with `conflict` ("ON CONFLICT … [RETURNING …]") they go through a
    scratch copy of those columns (dropped at commit) and one INSERT … SELECT … `conflict`,
    whose RETURNING rows are returned."""
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    # COPY goes through psycopg's own cursor: its errors become Django's (IntegrityError …)
    with connection.cursor() as cursor, connection.wrap_database_errors:
        if conflict is None:
            with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return []
        # One scratch table per (table, column list): two callers naming different columns in
        # one transaction (an import, then a mirror) must not share a table shaped by the first.
        shape = hashlib.blake2s(names.encode(), digest_size=4).hexdigest()
        scratch = connection.ops.quote_name(f"copy_scratch_{model._meta.db_table}_{shape}")
        cursor.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {scratch} ON COMMIT DROP AS "  # noqa: S608
            f"SELECT {names} FROM {table} WITH NO DATA"
        )
        cursor.execute(f"TRUNCATE {scratch}")
        with cursor.cursor.copy(f"COPY {scratch} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        cursor.execute(
            f"INSERT INTO {table} ({names}) SELECT {names} FROM {scratch} {conflict}",  # noqa: S608
            list(params),
        )
        return cursor.fetchall() if "RETURNING" in conflict else []


def bulk_insert(
    model: type[models.Model],
    objects: Iterable[models.Model],
    *,
    ignore_conflicts: bool = False,
    batch_size: int = 1000,
) -> int:
    """Insert model instances like `bulk_create`, without setting their primary keys. On
    PostgreSQL the rows are COPY-ed (through a scratch table when conflicts are ignored).
    Returns how many instances were given."""
    objects = list(objects)
    if not objects:
        return 0
    if connection.vendor != "postgresql":
        model._default_manager.bulk_create(
            objects, batch_size=batch_size, ignore_conflicts=ignore_conflicts
        )
        return len(objects)
    # every column but a key the database generates (db_returning: the auto fields)
    fields = [f for f in model._meta.concrete_fields if not (f.primary_key and f.db_returning)]
    columns = [f.column for f in fields]
    preparers = [_preparer(f) for f in fields]

    def rows() -> Iterable[list[Any]]:
        for obj in objects:
            obj._prepare_related_fields_for_save(operation_name="bulk_insert")
            yield [prepare(obj) for prepare in preparers]

    conflict = "ON CONFLICT DO NOTHING" if ignore_conflicts else None
    copy_rows(model, columns, rows(), conflict=conflict)
    return len(objects)


def json_text(value: Any) -> str | None:
    """A JSON value as the text a jsonb column takes through COPY (None: SQL NULL, as Django
    stores a JSONField's None)."""
    if value is None:
        return None
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # integers past 64 bits
        return json.dumps(value, ensure_ascii=False)


def _given_fields(model: type[models.Model], names: Sequence[str]) -> list[models.Field]:
    return [model._meta.get_field(name) for name in names]  # type: ignore[misc]


def insert_values(
    model: type[models.Model],
    names: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    ignore_conflicts: bool = False,
    returning: Sequence[str] = (),
    batch_size: int = 1000,
    planned: bool = False,
) -> list[tuple[Any, ...]]:
    """Insert plain rows (values for the fields `names`, Python values as the fields hold them)
    without a model instance per row; every other field takes its default, computed once.
    PostgreSQL: COPY, through a scratch table with ON CONFLICT DO NOTHING when conflicts are
    ignored, returning the `returning` columns of the rows actually inserted. Elsewhere:
    `bulk_create`, and nothing is returned. `planned`: rows made by `value_plan` already."""
    given = _given_fields(model, names)
    if connection.vendor != "postgresql":
        attnames = [f.attname for f in given]
        objects = (model(**dict(zip(attnames, row, strict=True))) for row in rows)
        model._default_manager.bulk_create(
            objects, batch_size=batch_size, ignore_conflicts=ignore_conflicts
        )
        return []
    fields = [f for f in model._meta.concrete_fields if not (f.primary_key and f.db_returning)]
    prepared = rows if planned else map(_row_plan(given, fields), rows)
    clauses = ["ON CONFLICT DO NOTHING"] if ignore_conflicts else []
    if returning:
        quote = connection.ops.quote_name
        columns = (quote(f.column) for f in _given_fields(model, returning))
        clauses.append("RETURNING " + ", ".join(columns))
    conflict = " ".join(clauses) or None
    return copy_rows(model, [f.column for f in fields], prepared, conflict=conflict)


def value_plan(model: type[models.Model], names: Sequence[str]) -> Callable[[Sequence[Any]], Any]:
    """values for the fields `names` -> the row `insert_values(…, planned=True)` takes (the
    COPY's on PostgreSQL), made ahead: on another thread than the connection's, one plan each."""
    if connection.vendor != "postgresql":
        return tuple
    fields = [f for f in model._meta.concrete_fields if not (f.primary_key and f.db_returning)]
    return _row_plan(_given_fields(model, names), fields)


def insert_new(
    model: type[models.Model],
    names: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    key: str,
    batch_size: int = 1000,
) -> list[tuple[Any, Any]]:
    """`insert_values(…, ignore_conflicts=True, returning=(pk, key))` for rows a look-up just
    found missing: the same rows stored and returned. PostgreSQL: the only conflict left is a
    concurrent insert, so the (auto) keys come from the sequence and the rows are COPY-ed
    straight in a savepoint; a unique violation rolls back to it and takes the scratch path."""
    pk = model._meta.pk
    scratch = functools.partial(
        insert_values, model, names, rows, ignore_conflicts=True, returning=(pk.name, key)
    )
    if connection.vendor != "postgresql" or not rows:
        return scratch(batch_size=batch_size)  # type: ignore[return-value]
    with connection.cursor() as cursor:
        cursor.execute(  # the sequence looked up once, not per row
            "WITH s AS MATERIALIZED (SELECT pg_get_serial_sequence(%s, %s)::regclass AS seq) "
            "SELECT nextval(s.seq) FROM s, generate_series(1, %s)",
            [connection.ops.quote_name(model._meta.db_table), pk.column, len(rows)],
        )
        ids = sorted(value for (value,) in cursor.fetchall())
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    plan = _row_plan(_given_fields(model, names), fields)
    try:
        with transaction.atomic():
            columns = [pk.column, *(f.column for f in fields)]
            copy_rows(model, columns, ((i, *plan(row)) for i, row in zip(ids, rows, strict=True)))
    except IntegrityError as error:
        if getattr(error.__cause__, "sqlstate", None) != "23505":  # unique_violation
            raise
        return scratch()  # type: ignore[return-value]
    at = list(names).index(key)
    return [(i, row[at]) for i, row in zip(ids, rows, strict=True)]


# Distinct datetimes a row plan keeps the text of. psycopg formats a datetime for COPY as
# `str(value)` (ISO 8601 with its offset) at ~1 µs each, and a refresh's rows repeat a few: its
# own time on every row, the records' stamps. The same text, made once, reads back the same.
MOMENT_TEXTS = 4096


def _default(field: models.Field) -> Any:
    """The value a field not given takes, as COPY sends it: a JSON field's default as its text
    (psycopg serialised it with the standard library on every row), a moment's as its text."""
    if type(field) is models.JSONField and field.encoder is None:
        return json_text(field.get_default())
    value = field.get_db_prep_save(field.get_default(), connection)
    return str(value) if type(value) is datetime else value


def _row_plan(
    given: list[models.Field], fields: list[models.Field]
) -> Callable[[Sequence[Any]], Sequence[Any]]:
    """given row -> its values for the table's columns `fields`: the JSON ones serialised, the
    datetimes as psycopg's text (each distinct one formatted once), each field not given its
    default (computed once), in column order: C-level steps, not a Python step per column."""
    json_at = [i for i, f in enumerate(given) if isinstance(f, models.JSONField)]
    moments = [i for i, f in enumerate(given) if isinstance(f, models.DateTimeField)]
    texts: dict[datetime, str] = {}
    position = {f.name: i for i, f in enumerate(given)}
    defaults: list[Any] = []
    order: list[int] = []
    for f in fields:
        if f.name in position:
            order.append(position[f.name])
        else:
            order.append(len(given) + len(defaults))
            defaults.append(_default(f))
    pick = operator.itemgetter(*order) if len(order) > 1 else (lambda v: (v[order[0]],))
    if order == list(range(len(order))) and len(order) == len(given):
        pick = None  # every column given, in the table's order

    def plan(row: Sequence[Any]) -> Sequence[Any]:
        values = [*row, *defaults]
        for i in json_at:
            values[i] = json_text(values[i])
        for i in moments:
            value = values[i]
            if type(value) is datetime:
                text = texts.get(value)
                if text is None:
                    if len(texts) >= MOMENT_TEXTS:
                        texts.clear()
                    text = texts[value] = str(value)
                values[i] = text
        return values if pick is None else pick(values)

    return plan


def update_values(
    model: type[models.Model],
    names: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    batch_size: int = 1000,
) -> int:
    """Set the fields `names` of existing rows: each row is (primary key, *values). PostgreSQL:
    COPY into a scratch table and one UPDATE … FROM it. Elsewhere: `bulk_update`. Returns how
    many rows were given."""
    rows = list(rows)
    if not rows:
        return 0
    given = _given_fields(model, names)
    if connection.vendor != "postgresql":
        attnames = [f.attname for f in given]
        objects = [model(pk=row[0], **dict(zip(attnames, row[1:], strict=True))) for row in rows]
        model._default_manager.bulk_update(objects, list(names), batch_size=batch_size)
        return len(rows)
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    pk = quote(model._meta.pk.column)
    columns = [quote(f.column) for f in given]
    json_at = [i + 1 for i, f in enumerate(given) if isinstance(f, models.JSONField)]
    # one scratch table per column set (a second call in the transaction may set others)
    key = hashlib.sha1(",".join(columns).encode(), usedforsecurity=False).hexdigest()[:8]
    scratch = quote(f"copy_update_{model._meta.db_table}_{key}")
    names_sql = ", ".join([pk, *columns])
    with connection.cursor() as cursor, connection.wrap_database_errors:
        cursor.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {scratch} ON COMMIT DROP AS "  # noqa: S608
            f"SELECT {names_sql} FROM {table} WITH NO DATA"
        )
        cursor.execute(f"TRUNCATE {scratch}")
        with cursor.cursor.copy(f"COPY {scratch} ({names_sql}) FROM STDIN") as copy:
            for row in rows:
                values = list(row)
                for i in json_at:
                    values[i] = json_text(values[i])
                copy.write_row(values)
        assignments = ", ".join(f"{c} = s.{c}" for c in columns)
        cursor.execute(
            f"UPDATE {table} SET {assignments} FROM {scratch} s "  # noqa: S608
            f"WHERE {table}.{pk} = s.{pk}"
        )
    return len(rows)


# Values PostgreSQL's get_db_prep_save hands on unchanged, by the exact field classes that take
# them (a subclass may prepare its own way): the common cases skip Django's per-value
# preparation (DateTimeField's alone took 6 s of a 10,000-record refresh on a loaded machine).
# Anything else goes through the field.
_TEXT = frozenset((str, type(None)))
_AS_IS: dict[type[models.Field], frozenset[type]] = {
    models.CharField: _TEXT,
    models.TextField: _TEXT,
    models.SlugField: _TEXT,
    models.BooleanField: frozenset((bool, type(None))),
    **{
        kind: frozenset((int, type(None)))
        for kind in (
            models.IntegerField,
            models.BigIntegerField,
            models.SmallIntegerField,
            models.PositiveIntegerField,
            models.PositiveBigIntegerField,
            models.PositiveSmallIntegerField,
            models.ForeignKey,  # to an integer key; any other value type goes through it
        )
    },
}


def _preparer(field: models.Field) -> Callable[[models.Model], Any]:
    """obj -> the value `field` writes for obj, as `get_db_prep_save(pre_save(obj, True))`."""
    prep = field.get_db_prep_save
    if type(field).pre_save is not models.Field.pre_save and not (
        isinstance(field, models.DateField) and not field.auto_now and not field.auto_now_add
    ):

        def prepare_saved(obj: models.Model) -> Any:
            return prep(field.pre_save(obj, True), connection)

        return prepare_saved
    attname = field.attname
    kinds = _AS_IS.get(type(field))
    if kinds is not None:

        def prepare_plain(obj: models.Model) -> Any:
            value = getattr(obj, attname)
            return value if type(value) in kinds else prep(value, connection)

        return prepare_plain
    if type(field) is models.DateTimeField:

        def prepare_moment(obj: models.Model) -> Any:
            value = getattr(obj, attname)
            if value is None or (type(value) is datetime and value.tzinfo is not None):
                return value
            return prep(value, connection)

        return prepare_moment

    def prepare(obj: models.Model) -> Any:
        return prep(getattr(obj, attname), connection)

    return prepare


def json_loads(data: bytes | str) -> Any:
    """orjson's parse, or the standard library's for what orjson refuses (integers past 64
    bits): JSON we stored or canonicalised ourselves, read back fast."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def stream_rows(
    values: QuerySet,
    *,
    itersize: int = 1000,
    json_loads: Callable[[bytes | str], Any] | None = None,
) -> Iterator[tuple[Any, ...]]:
    """The rows of a `values_list` queryset as plain tuples. PostgreSQL: a named (server-side)
    cursor in binary, without Django's per-value converters (bytea arrives as bytes, not hex;
    timestamps as datetimes; jsonb through `json_loads` when given — cast it to text in the
    query to get its text). Elsewhere: Django's own iterator."""
    if connection.vendor != "postgresql":
        yield from values.iterator(chunk_size=itersize)
        return
    try:
        sql, params = values.query.sql_with_params()
    except EmptyResultSet:  # qs.none()
        return
    connection.ensure_connection()
    # A named cursor lives in a transaction: the caller's, or one for this read
    with (
        transaction.atomic(savepoint=False),
        connection.connection.cursor(name=f"rows_{next(_cursor_names)}", binary=True) as cursor,
    ):
        if json_loads is not None:
            from psycopg.types.json import set_json_loads

            set_json_loads(json_loads, cursor)
        cursor.itersize = itersize
        cursor.execute(sql, params)
        yield from cursor
