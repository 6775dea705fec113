"""Forms for reply drafts and SMTP settings. They validate input only; saving goes through actions."""

from __future__ import annotations

from email.utils import getaddresses
from typing import Any

from django import forms

from apps.accounts.models import ImapSecurity
from apps.replies import compose

MAX_RECIPIENTS = 100


def format_people(persons: Any) -> str:
    """[{name, address}] as an editable header line: `Name <address>, other@example.com`."""
    parts = []
    for person in compose.people(persons):
        name = person["name"].replace('"', "'")
        parts.append(f'"{name}" <{person["address"]}>' if name else person["address"])
    return ", ".join(parts)


class RecipientsField(forms.CharField):
    def clean(self, value: Any) -> list[dict[str, str]]:
        text = str(super().clean(value) or "")
        if "\n" in text or "\r" in text:
            text = text.replace("\r", " ").replace("\n", " ")
        persons = []
        bad = []
        for name, address in getaddresses([text]):
            address = address.strip()
            if not address and not name:
                continue
            if not compose.is_valid_address(address):
                bad.append(address or name)
                continue
            persons.append({"name": name.strip(), "address": address})
        if bad:
            raise forms.ValidationError("Not an email address: " + ", ".join(bad))
        if len(persons) > MAX_RECIPIENTS:
            raise forms.ValidationError(f"At most {MAX_RECIPIENTS} recipients.")
        return persons


class DraftForm(forms.Form):
    to = RecipientsField(required=False, max_length=20000, label="To")
    cc = RecipientsField(required=False, max_length=20000, label="Cc")
    subject = forms.CharField(max_length=998, required=False)
    body = forms.CharField(widget=forms.Textarea(attrs={"rows": 16}), required=False, strip=False, max_length=500_000)
    include_signature = forms.BooleanField(required=False, label="Add my signature")

    def clean_subject(self) -> str:
        subject = str(self.cleaned_data.get("subject") or "")
        return " ".join(subject.splitlines()).strip()


class SmtpSettingsForm(forms.Form):
    host = forms.CharField(max_length=255, label="SMTP server", help_text="e.g. smtp.example.com")
    port = forms.IntegerField(
        min_value=1, max_value=65535, required=False, help_text="Empty: 465 for TLS, 587 for STARTTLS."
    )
    security = forms.ChoiceField(choices=ImapSecurity.choices, initial=ImapSecurity.STARTTLS, label="Encryption")
    username = forms.CharField(max_length=320, required=False, help_text="Empty: no login (rare).")
    password = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        max_length=1000,
        required=False,
        strip=False,
        help_text="Never shown again. Leave empty to keep the stored one.",
    )

    def clean_host(self) -> str:
        host = str(self.cleaned_data["host"]).strip()
        if not host or any(char.isspace() for char in host) or "/" in host:
            raise forms.ValidationError("Enter a host name such as smtp.example.com.")
        return host
