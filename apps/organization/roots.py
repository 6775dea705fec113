"""Where a library may live. Each user's root is under their own base, `ORGANIZATION_LIBRARY_DIR/<user id>`
(default `DATA_DIR/library/<user id>`), which the server chooses. A superuser may also use a folder under
one of `ORGANIZATION_LIBRARY_PARENTS` (MAILAGENT_LIBRARY_PARENTS), as long as it does not overlap the data
directory, the other users' bases, the application's code, the Python environment or another library.
Paths are compared after resolving symlinks, so a link cannot smuggle a forbidden folder in."""

from __future__ import annotations

import os
import site
import sys
from pathlib import Path
from typing import Any

from django.conf import settings

from apps.organization.models import Library


def library_base(owner_id: int) -> Path:
    """The folder the server gives `owner_id` for their library (the default root)."""
    return Path(settings.ORGANIZATION_LIBRARY_DIR) / str(owner_id)


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(path))


def _overlaps(first: Path, second: Path) -> bool:
    return first.is_relative_to(second) or second.is_relative_to(first)


def _protected() -> list[tuple[Path, str]]:
    """Folders no library may be in or contain, except a user's own base (inside the data directory)."""
    places: list[tuple[Path, str]] = [
        (_real(settings.DATA_DIR), "the server's data directory (database, secret key, caches)"),
        (_real(settings.ORGANIZATION_LIBRARY_DIR), "the folder that holds every user's library"),
        (_real(settings.BASE_DIR), "the application's code"),
        (_real(sys.prefix), "the Python environment the server runs in"),
        (_real(sys.base_prefix), "the Python installation"),
    ]
    for packages in [*site.getsitepackages(), site.getusersitepackages()]:
        places.append((_real(packages), "Python's packages (code the server runs)"))
    return places


def allowed_parents(owner: Any) -> list[Path]:
    """The extra parent folders `owner` may put a library under (superusers only)."""
    return list(settings.ORGANIZATION_LIBRARY_PARENTS) if owner.is_superuser else []


def _parents_hint() -> str:
    parents = ", ".join(str(p) for p in settings.ORGANIZATION_LIBRARY_PARENTS)
    if parents:
        return f", or under one of the allowed parent folders ({parents})"
    return " (to allow other folders, list their parents in MAILAGENT_LIBRARY_PARENTS)"


def root_problem(*, owner: Any, root: str | Path) -> str:
    """Why `root` cannot be `owner`'s library root, in words that say what to do; "" when it can."""
    text = str(root).strip()
    if not text or "\x00" in text:
        return "The library root must be an absolute path, e.g. " + str(library_base(owner.pk)) + "."
    path = Path(os.path.expanduser(text))
    if not path.is_absolute():
        return f"The library root must be an absolute path, e.g. {library_base(owner.pk)}."
    real = _real(path)
    base = _real(library_base(owner.pk))
    in_own_base = real.is_relative_to(base)
    if not in_own_base:
        if not any(real.is_relative_to(_real(parent)) for parent in allowed_parents(owner)):
            where = f"{base} or a folder inside it"
            if owner.is_superuser:
                return f"{path} is not an allowed library folder: use {where}{_parents_hint()}."
            return f"{path} is not an allowed library folder: your library must be {where}."
        for place, what in _protected():
            if _overlaps(real, place):
                return f"{path} cannot be a library: it overlaps {what} ({place})."
    others = Library.objects.exclude(owner_id=owner.pk).values_list("root", flat=True)
    for other in others:
        if _overlaps(real, _real(other)):
            return f"{path} cannot be your library: it overlaps another user's library."
    return ""


def library_problem(library: Library) -> str:
    """Why the library's stored root is not usable any more ("" when it is): a root set before roots were
    confined, or one whose folders were replaced by symlinks. Such a library is not scanned or watched and
    takes no uploads or moves until its owner chooses an allowed root."""
    problem = root_problem(owner=library.owner, root=library.root)
    if not problem:
        return ""
    return f"Your library folder is not used until you change it: {problem}"
