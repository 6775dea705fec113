"""Document kinds that other apps put in the one index (organization registers "file", its library files, in
its AppConfig.ready()). Search knows a registered kind only through this entry: the table its rows live in
(for `filename:`), how to describe hits of it on a results page, and how to preview one for its owner. So
search imports nothing from the apps above it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import models


@dataclass(frozen=True, slots=True)
class DocumentFacts:
    """What a results row shows of one document of a registered kind."""

    title: str
    path: str
    folder: str
    mime_type: str
    is_image: bool
    sender: str
    date: dt.datetime | None


@dataclass(frozen=True, slots=True)
class DocumentPreview:
    path: str  # the document's own path (its extension names the icon)
    image: Path | None  # an image file on disk to thumbnail, when there is one


@dataclass(frozen=True, slots=True)
class DocumentKindEntry:
    kind: str  # the search_document.kind value, e.g. "file"
    model: type[models.Model]  # rows of this kind: search_document.object_id is their primary key
    path_column: str  # the column of the model's table that `filename:` matches
    describe: Callable[[Iterable[int]], dict[int, DocumentFacts]]  # {pk: facts} of the existing ones
    preview: Callable[[Any, int], DocumentPreview | None]  # (user, pk): None when it is not the user's


_KINDS: dict[str, DocumentKindEntry] = {}


def register_document_kind(entry: DocumentKindEntry) -> None:
    _KINDS[entry.kind] = entry


def document_kind(kind: str) -> DocumentKindEntry | None:
    return _KINDS.get(kind)
