"""Labels about secrets that say how they are really stored (mailagent/crypto.py decides)."""

from __future__ import annotations

from django import template
from django.db import models

from mailagent.crypto import SecretStorage, new_secret_storage_label, secret_storage

register = template.Library()


@register.simple_tag
def new_secret_storage() -> str:
    """How a secret typed into a form now will be stored: encrypted, or plaintext until a key is set."""
    return new_secret_storage_label()


@register.simple_tag
def stored_secret(instance: models.Model, field_name: str) -> SecretStorage:
    """How this object's secret sits in the database (none, encrypted, plaintext, cannot decrypt)."""
    return secret_storage(instance, field_name)
