"""Secrets in the Django admin: write-only inputs, truthful storage labels, no crash on undecryptable values.

`WriteOnlySecretsMixin` turns each model field named in `secret_fields` into an empty password input: the
stored value is never sent to the browser, a blank submission keeps it, a typed value replaces it. The help
text says how the current value is really stored (crypto.secret_storage). `encrypted_json_display()` shows
an encrypted JSON log field read-only, or the "cannot decrypt: …" state instead of failing the page.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, ClassVar

from django import forms
from django.contrib import admin
from django.db import models
from django.http import HttpRequest
from django.utils.html import format_html

from mailagent.crypto import is_undecryptable, new_secret_storage_label, secret_storage

KEEP_HINT = "Leave blank to keep the stored value; it is never shown."


class WriteOnlySecretField(forms.CharField):
    """An empty password input: a typed value replaces the secret, a blank one keeps it."""

    widget = forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"})

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, strip=False, **kwargs)

    def has_changed(self, initial: Any, data: Any) -> bool:
        return bool(data)


class WriteOnlySecretsMixin:
    secret_fields: ClassVar[tuple[str, ...]] = ()

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form_class = super().get_form(request, obj, change=change, **kwargs)  # type: ignore[misc]
        names = [name for name in self.secret_fields if name in form_class.base_fields]
        # Declared on a subclass: ModelForm's metaclass would rebuild plain model fields from Meta.
        attrs: dict[str, Any] = {}
        for name in names:
            if obj is not None and obj.pk:
                help_text = f"Currently {secret_storage(obj, name).label}. {KEEP_HINT}"
            else:
                help_text = f"Will be {new_secret_storage_label()}; it is never shown again."
            attrs[name] = WriteOnlySecretField(label=form_class.base_fields[name].label, help_text=help_text)

        def clean(form: Any) -> dict[str, Any]:
            cleaned: dict[str, Any] = form_class.clean(form)
            for name in names:
                if not cleaned.get(name) and form.instance.pk:
                    # The instance still holds the stored value (or its undecryptable placeholder, which is
                    # written back byte for byte).
                    cleaned[name] = getattr(form.instance, name)
            return cleaned

        attrs["clean"] = clean
        return type(form_class)(form_class.__name__, (form_class,), attrs)


def encrypted_json_display(field_name: str, description: str) -> Callable[[Any, models.Model], str]:
    """A read-only admin display of an encrypted JSON field (pretty JSON, or why it cannot be decrypted)."""

    @admin.display(description=description)
    def display(modeladmin: Any, obj: models.Model) -> str:
        value = getattr(obj, field_name)
        if value is None:
            return "—"
        if is_undecryptable(value):
            return format_html(
                '<span class="errornote" data-state="undecryptable">{}</span>', str(value["undecryptable"])
            )
        return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False, default=str)[:20000])

    return display


def undecryptable_fields(obj: models.Model | None, names: tuple[str, ...]) -> tuple[str, ...]:
    """Those of `names` whose value this process cannot decrypt: made read-only in the admin, so saving the
    row keeps the stored value instead of writing its "cannot decrypt" label over it."""
    if obj is None:
        return ()
    return tuple(name for name in names if is_undecryptable(getattr(obj, name)))
