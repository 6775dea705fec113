"""Whose data a management command works on: `--owner EMAIL`, else the first superuser, else the first user."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError


def resolve_command_owner(email: str | None) -> Any:
    users = get_user_model().objects
    if email:
        owner = users.filter(email__iexact=email).first()
        if owner is None:
            raise CommandError(f"No user with email {email}")
        return owner
    owner = users.filter(is_superuser=True).order_by("pk").first() or users.order_by("pk").first()
    if owner is None:
        raise CommandError("No user exists yet: run `manage.py bootstrap` (or `make run`) first")
    return owner
