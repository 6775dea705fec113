"""What every organization write stands on: the owner's library and organization settings (each created on
first use), whether the library may be used, the app's errors, and the retrain request every decision makes."""

from __future__ import annotations

import logging
from typing import Any

from django.db import IntegrityError, transaction
from django_q.tasks import async_task

from apps.organization import roots
from apps.organization.models import ClassifierState, Library, OrganizationSettings

logger = logging.getLogger(__name__)


class OrganizationError(Exception):
    """A request that cannot be done as asked; the message says why and what to do."""


class OrganizationDecisionError(Exception):
    """A decision that cannot be carried out; the message says what happened and what to do."""


def get_library(*, owner: Any) -> Library:
    """The owner's library, created with the default root (and its inbox) on first use."""
    library = Library.objects.filter(owner=owner).first()
    if library is None:
        try:
            with transaction.atomic():
                library = Library.objects.create(owner=owner, root=str(roots.library_base(owner.pk)))
        except IntegrityError:
            library = Library.objects.get(owner=owner)
    ensure_dirs(library)
    return library


def require_usable(library: Library) -> None:
    """OrganizationError when the library's root is outside the allowed folders (roots.library_problem)."""
    problem = roots.library_problem(library)
    if problem:
        raise OrganizationError(problem)


def ensure_dirs(library: Library) -> None:
    if roots.library_problem(library):
        return  # never create folders where the library may not be
    try:
        library.inbox_path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        logger.warning("organization: cannot create %s: %s", library.inbox_path, exc)


def get_settings(*, owner: Any) -> OrganizationSettings:
    found = OrganizationSettings.objects.filter(owner=owner).select_related("api_config").first()
    if found is not None:
        return found
    try:
        with transaction.atomic():
            return OrganizationSettings.objects.create(owner=owner)
    except IntegrityError:
        return OrganizationSettings.objects.get(owner=owner)


def request_retrain(*, library: Library) -> None:
    """Mark the classifier stale and retrain in the background once this transaction commits."""
    ClassifierState.objects.get_or_create(library=library)
    ClassifierState.objects.filter(library=library).update(stale=True)
    library_id = library.pk

    def enqueue() -> None:
        async_task("apps.organization.tasks.retrain_task", library_id, task_name=f"organization: retrain {library_id}")

    transaction.on_commit(enqueue)
