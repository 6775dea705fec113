"""Forms for the filter pages. They validate input (the regex through the same compile as the admin and the
API); saving goes through actions."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.safestring import mark_safe

from apps.orchestration.models import Director
from apps.routing import actions
from apps.routing.matching import InvalidPattern, backtracking_warning, compile_pattern
from apps.routing.models import FILTER_HELP, Filter, FilterField, RuleAction

# The pattern help as markup: its <code> examples stay code, and "Name <address>" is text, not an HTML
# <address> element (which italicised the rest of the help).
PATTERN_HELP = mark_safe(FILTER_HELP.replace("<address>", "&lt;address&gt;"))  # noqa: S308 -- our own text


class FilterForm(forms.Form):
    director = forms.ModelChoiceField(queryset=Director.objects.none(), empty_label=None)
    field = forms.ChoiceField(choices=FilterField.choices, initial=FilterField.FROM)
    regex = forms.CharField(max_length=1000, label="Pattern", help_text=PATTERN_HELP, strip=False)
    case_insensitive = forms.BooleanField(required=False, initial=True, label="Ignore case")
    description = forms.CharField(max_length=300, required=False)
    save_attachments = forms.BooleanField(
        required=False,
        label="Save attachments to the library inbox",
        help_text="Attachments of the mail this filter matches go to Organize's inbox (the account's size and "
        "type limits apply), even when the account's own switch is off.",
    )
    mail_action = forms.ChoiceField(
        choices=RuleAction.choices,
        required=False,
        label="Then, on the mail server too",
        help_text="Done to each new mail this filter matches, here and on the server (you can undo it from the "
        "conversation).",
    )
    mail_action_folder = forms.CharField(
        max_length=512, required=False, label="Folder", help_text="For “Move to a folder”: its name, e.g. Receipts."
    )
    mail_action_tag = forms.CharField(
        max_length=64,
        required=False,
        label="Tag",
        help_text="For “Add a tag”: its name, e.g. receipts (a keyword, Gmail label or Outlook category on the "
        "server).",
    )

    def __init__(self, *args: Any, owner: Any, refuse_slow: bool = False, **kwargs: Any) -> None:
        """`refuse_slow`: a pattern measured to backtrack catastrophically is an error (the setup wizard),
        not only a warning (`self.warning`, shown once the filter is saved)."""
        super().__init__(*args, **kwargs)
        self.fields["director"].queryset = Director.objects.filter(owner=owner).order_by("name")  # type: ignore[attr-defined]
        self.refuse_slow = refuse_slow
        self.warning = ""

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        pattern = data.get("regex")
        if pattern is not None:
            case_insensitive = bool(data.get("case_insensitive"))
            try:
                compile_pattern(pattern, case_insensitive=case_insensitive)
            except InvalidPattern as exc:
                self.add_error("regex", str(exc))
            else:
                self.warning = backtracking_warning(pattern, case_insensitive=case_insensitive)
                if self.warning and self.refuse_slow:
                    self.add_error("regex", self.warning)
        return data

    def create_filter(self) -> Filter | None:
        """Create the filter from this (valid) form; a model validation error lands on the form and None is
        returned. The one place the filter pages (routing, settings, setup wizard) create filters."""
        data = self.cleaned_data
        try:
            return actions.create_filter(
                director=data["director"],
                field_name=data["field"],
                regex_text=data["regex"],
                case_insensitive=data["case_insensitive"],
                description=data["description"],
                save_attachments=bool(data.get("save_attachments")),
                mail_action=data.get("mail_action") or "",
                mail_action_folder=data.get("mail_action_folder") or "",
                mail_action_tag=data.get("mail_action_tag") or "",
            )
        except ValidationError as exc:
            add_validation_errors(self, exc)
            return None


def add_validation_errors(form: forms.Form, exc: ValidationError) -> None:
    """A model ValidationError onto the form: per field where the form has that field, else non-field."""
    for field, errors in exc.message_dict.items():
        form.add_error(field if field in form.fields else None, errors)


class DirectorForm(forms.Form):
    name = forms.CharField(max_length=100, label="New director")
    description = forms.CharField(max_length=500, required=False)


class TestFiltersForm(forms.Form):
    """The dry run: the saved filters, or (with `regex`) one pattern not saved yet, over the newest emails."""

    last = forms.IntegerField(min_value=1, max_value=5000, initial=50, required=False, label="Last emails")
    director = forms.ModelChoiceField(queryset=Director.objects.none(), required=False, empty_label="All directors")
    # Sent by the add-filter form's "Try this pattern" button (the same field names as FilterForm).
    field = forms.ChoiceField(choices=FilterField.choices, required=False)
    regex = forms.CharField(max_length=1000, required=False, strip=False)
    case_insensitive = forms.BooleanField(required=False)

    def __init__(self, *args: Any, owner: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["director"].queryset = Director.objects.filter(owner=owner).order_by("name")  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not data.get("last"):
            data["last"] = 50
        if data.get("regex"):
            if not data.get("field"):
                self.add_error("field", "Choose the field the pattern is matched against.")
            try:
                compile_pattern(data["regex"], case_insensitive=bool(data.get("case_insensitive")))
            except InvalidPattern as exc:
                self.add_error("regex", str(exc))
        return data
