"""The search syntax (apps/search/query.py) turned into index filters: the accounts a user may search, the
filters the CLI, the API and the MCP tools build from their arguments, and each operator as SQL over the search
documents (folders, tags, flags, file names, header fields). Reached through apps.search.selectors."""

from __future__ import annotations

import datetime as dt
import unicodedata
from dataclasses import replace
from typing import Any

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from apps.accounts.actions import tag_key
from apps.accounts.models import Attachment, MailAccount, MailFolder, MailTag, Message, MessageLocation, MessageTag
from apps.search.backends.base import SearchFilters
from apps.search.headers import exact_address, term_pattern
from apps.search.kinds import document_kind
from apps.search.models import DocumentKind, SearchHeaders
from apps.search.query import HEADER_OPERATORS, ME, Operator, SearchQuery

MESSAGE_KINDS = (DocumentKind.MESSAGE.value, DocumentKind.ATTACHMENT.value)
MAIL_KINDS = MESSAGE_KINDS
FILE_KIND = DocumentKind.FILE.value  # read once: an enum member's .value is a slow property in loops over hits
ATTACHMENT_KIND = DocumentKind.ATTACHMENT.value
ALL_KINDS = (*MESSAGE_KINDS, FILE_KIND)


def account_ids_for_user(user: Any, account: str | None = None) -> tuple[int, ...]:
    """The user's accounts, optionally narrowed to one by name (or id); unknown names give none."""
    accounts = MailAccount.objects.filter(owner=user)
    if account:
        by_name_or_id = Q(name=account)
        if account.isdigit():
            by_name_or_id |= Q(pk=int(account))
        accounts = accounts.filter(by_name_or_id)
    return tuple(accounts.values_list("pk", flat=True))


def account_ids_by_name(name: str) -> tuple[int, ...]:
    return tuple(MailAccount.objects.filter(name=name).values_list("pk", flat=True))


def parse_date_bound(value: str | dt.date | None, *, end: bool) -> dt.datetime | None:
    """A date (the whole day) or an ISO datetime; naive values are in the current time zone."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, dt.date):
        moment = dt.datetime.combine(value, dt.time.max if end else dt.time.min)
    else:
        text = value.strip()
        try:
            moment = dt.datetime.fromisoformat(text)
            if len(text) <= 10:
                moment = dt.datetime.combine(moment.date(), dt.time.max if end else dt.time.min)
        except ValueError as exc:
            raise ValueError(f"{value!r} is not a date (YYYY-MM-DD) or ISO datetime") from exc
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment


def build_filters(
    *,
    account_ids: tuple[int, ...] | None,
    folder: str | None = None,
    date_from: str | dt.date | None = None,
    date_to: str | dt.date | None = None,
    from_address: str | None = None,
    to_address: str | None = None,
    has_attachment: bool | None = None,
    kind: str | None = None,
) -> SearchFilters:
    kinds: tuple[str, ...] | None = None
    if kind:
        if kind not in DocumentKind.values:
            raise ValueError(f"kind must be one of {', '.join(DocumentKind.values)}")
        kinds = (kind,)
    return SearchFilters(
        account_ids=account_ids,
        folder=folder or None,
        date_from=parse_date_bound(date_from, end=False),
        date_to=parse_date_bound(date_to, end=True),
        from_address=from_address or None,
        to_address=to_address or None,
        has_attachment=has_attachment,
        kinds=kinds,
    )


def _like(value: str) -> str:
    escaped = value.strip().lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _tables() -> tuple[str, str]:
    quote = connection.ops.quote_name
    return quote(Message._meta.db_table), quote(Attachment._meta.db_table)


def _file_paths_condition(like: str) -> str:
    """`filename:` over the registered file kind's paths ("" when no app registered one)."""
    entry = document_kind(FILE_KIND)
    if entry is None:
        return ""
    quote = connection.ops.quote_name
    table, column = quote(entry.model._meta.db_table), quote(entry.path_column)
    return (
        f" OR ({{d}}.kind = 'file' AND {{d}}.object_id IN"  # noqa: S608 (table names; values are params)
        f" (SELECT f.id FROM {table} f WHERE lower(f.{column}){like}))"
    )


def _location_tables() -> tuple[str, str]:
    quote = connection.ops.quote_name
    return quote(MessageLocation._meta.db_table), quote(MailFolder._meta.db_table)


def _tag_tables() -> tuple[str, str]:
    quote = connection.ops.quote_name
    return quote(MessageTag._meta.db_table), quote(MailTag._meta.db_table)


def _caseless(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


def folders_condition(folders: tuple[str, ...], account_ids: tuple[int, ...] | None) -> tuple[str, tuple[Any, ...]]:
    """Mail in any of `folders` or their subfolders, as `in:` means it, as one condition for
    SearchFilters.conditions (a mailbox MCP token restricted to folders searches only there)."""
    parts = [_condition(Operator(name="in", value=folder), account_ids) for folder in folders]
    return "(" + " OR ".join(sql for sql, _ in parts) + ")", tuple(p for _, params in parts for p in params)


def _condition(op: Operator, account_ids: tuple[int, ...] | None) -> tuple[str, tuple[Any, ...]]:
    """One operator as SQL over search_document "{d}" (documents of messages join the message table)."""
    messages, attachments = _tables()
    like = r" LIKE %s ESCAPE '\'"
    value = op.value
    if op.name in HEADER_OPERATORS:
        return _header_condition(op, account_ids)
    if op.name == "filename":
        files = _file_paths_condition(like)
        return (
            f"({{d}}.message_id IN (SELECT a.message_id FROM {attachments} a WHERE lower(a.filename){like})"  # noqa: S608
            f"{files})",
            (_like(value), _like(value)) if files else (_like(value),),
        )
    if op.name == "is":
        column, wanted = {"unread": ("seen", False), "read": ("seen", True), "starred": ("flagged", True)}[value]
        return f"{{d}}.message_id IN (SELECT m.id FROM {messages} m WHERE m.{column} = %s)", (wanted,)  # noqa: S608
    if op.name == "tag":
        # The user's own tags (apps.accounts MailTag): only their accounts' documents are searched, and a tag is
        # only ever on its owner's messages, so the key alone names the right rows.
        tagged, tags = _tag_tables()
        return (
            f"{{d}}.message_id IN (SELECT mt.message_id FROM {tagged} mt"  # noqa: S608 (table names; values are params)
            f" JOIN {tags} t ON t.id = mt.tag_id WHERE t.{connection.ops.quote_name('key')} = %s)",
            (tag_key(value),),
        )
    if op.name == "in":
        folder = value.strip().lower()
        folders = MailFolder.objects.all()
        if account_ids is not None:
            folders = folders.filter(account_id__in=account_ids)
        # Compared in Python: SQLite folds ASCII letters only, and folder names are often not ASCII.
        # NFC too: a name read from a file system (macOS writes NFD) and a typed name may compose "Ü" differently.
        asked = _caseless(folder)
        names = sorted(
            {
                name
                for name, display, role in folders.values_list("name", "display_name", "role")
                if asked in {_caseless(name), _caseless(display), _caseless(role)}
                or _caseless(name).startswith(f"{asked}/")
            }
        )
        escaped = folder.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        # Mail is in every folder it has a location in (a copy in two folders is found in both); library
        # files carry their folder on the document.
        placeholders = ", ".join(["%s"] * len(names))
        named = f" OR {{d}}.folder IN ({placeholders})" if names else ""
        located_named = f" OR f.name IN ({placeholders})" if names else ""
        located, folder_table = _location_tables()
        return (
            f"(({{d}}.kind = 'file' AND (lower({{d}}.folder) = %s OR lower({{d}}.folder){like}{named}))"  # noqa: S608
            f" OR {{d}}.message_id IN (SELECT l.message_id FROM {located} l"
            f" JOIN {folder_table} f ON f.id = l.folder_id"
            f" WHERE lower(f.name) = %s OR lower(f.name){like}{located_named}))",
            (folder, f"{escaped}/%", *names, folder, f"{escaped}/%", *names),
        )
    raise ValueError(f"{op.name}: is not a filter")


# The stored fields each header operator looks in: notmuch's to: is every recipient (To, Cc and Bcc).
HEADER_FIELDS = {
    "from": ("sender",),
    "to": ("to", "cc", "bcc"),
    "cc": ("cc",),
    "bcc": ("bcc",),
    "subject": ("subject",),
}


def _header_condition(op: Operator, account_ids: tuple[int, ...] | None) -> tuple[str, tuple[Any, ...]]:
    """from: to: cc: bcc: subject: as words or a phrase of the document's header fields (apps/search/headers.py);
    `me` as the exact address of the document's own account."""
    quote = connection.ops.quote_name
    headers = quote(SearchHeaders._meta.db_table)
    contains = "instr({column}, %s) > 0" if connection.vendor == "sqlite" else "strpos({column}, %s) > 0"
    columns = [f"h.{quote(column)}" for column in HEADER_FIELDS[op.name]]
    if op.value.lower() == ME and op.name != "subject":
        accounts = MailAccount.objects.exclude(address="")
        if account_ids is not None:
            accounts = accounts.filter(pk__in=account_ids)
        own = list(accounts.values_list("pk", "address"))
        if not own:
            return "1 = 0", ()
        found = " OR ".join(contains.format(column=column) for column in columns)
        per_account = " OR ".join(f"({{d}}.account_id = %s AND ({found}))" for _ in own)
        params: tuple[Any, ...] = tuple(
            value for pk, address in own for value in (pk, *[exact_address(address)] * len(columns))
        )
        return (
            f"EXISTS (SELECT 1 FROM {headers} h WHERE h.document_id = {{d}}.id AND ({per_account}))",  # noqa: S608
            params,
        )
    pattern = term_pattern(op.value)
    found = " OR ".join(contains.format(column=column) for column in columns)
    return (
        f"EXISTS (SELECT 1 FROM {headers} h WHERE h.document_id = {{d}}.id AND ({found}))",  # noqa: S608
        (pattern,) * len(columns),
    )


def filters_for_query(
    parsed: SearchQuery,
    *,
    user: Any = None,
    account: str | None = None,
    base: SearchFilters | None = None,
) -> SearchFilters:
    """SearchFilters for a parsed query. With `user`, only their accounts (and their library files unless an
    account is named); without (the CLI), every account. Unknown names raise ValueError."""
    if parsed.errors:
        raise ValueError("; ".join(parsed.errors))
    base = base or SearchFilters()
    names = [*([account] if account else []), *parsed.values("account")]
    account_ids: tuple[int, ...] | None = base.account_ids
    for name in names:
        found = account_ids_for_user(user, name) if user is not None else account_ids_by_name(name)
        if not found:
            raise ValueError(f"No account named {name!r}")
        account_ids = found if account_ids is None else tuple(pk for pk in account_ids if pk in found)
    if not names and user is not None and account_ids is None:
        account_ids = account_ids_for_user(user)
    owner_id = getattr(user, "pk", None) if user is not None and not names else None
    kinds: tuple[str, ...] = base.kinds or ALL_KINDS
    for value in parsed.values("kind"):
        wanted = {"mail": MAIL_KINDS, "file": (DocumentKind.FILE.value,)}.get(value, (value,))
        kinds = tuple(kind for kind in kinds if kind in wanted)
    for value in parsed.values("kind", negated=True):
        unwanted = {"mail": MAIL_KINDS, "file": (DocumentKind.FILE.value,)}.get(value, (value,))
        kinds = tuple(kind for kind in kinds if kind not in unwanted)
    if not kinds:
        kinds = ("-",)  # kind:mail -kind:mail: nothing
    conditions = list(base.conditions)
    for op in parsed.operators:
        if op.name in {"account", "kind", "before", "after", "date"}:
            continue
        if op.name == "has":
            sql, params = "{d}.has_attachments = %s", (True,)
        else:
            sql, params = _condition(op, account_ids)
        conditions.append((f"NOT COALESCE(({sql}), FALSE)" if op.negated else sql, params))
    for name in parsed.values("account", negated=True):
        found = account_ids_for_user(user, name) if user is not None else account_ids_by_name(name)
        if not found:
            raise ValueError(f"No account named {name!r}")
        if account_ids is not None:
            account_ids = tuple(pk for pk in account_ids if pk not in found)
        else:
            placeholders = ", ".join(["%s"] * len(found))
            conditions.append((f"NOT COALESCE(({{d}}.account_id IN ({placeholders})), FALSE)", tuple(found)))
    adapt = connection.ops.adapt_datetimefield_value
    for start, end in parsed.excluded_periods:
        bounds = [("{d}.date >= %s", start), ("{d}.date < %s", end)]
        sql = " AND ".join(clause for clause, moment in bounds if moment is not None)
        conditions.append((f"NOT COALESCE(({sql}), FALSE)", tuple(adapt(m) for _, m in bounds if m is not None)))
    date_from = max((d for d in (base.date_from, parsed.date_from) if d is not None), default=None)
    date_to = min((d for d in (base.date_to, parsed.date_to) if d is not None), default=None)
    return replace(
        base,
        account_ids=account_ids,
        owner_id=owner_id,
        kinds=kinds,
        date_from=date_from,
        date_to=date_to,
        conditions=tuple(conditions),
        exclude_words=(*base.exclude_words, *parsed.excluded),
    )
