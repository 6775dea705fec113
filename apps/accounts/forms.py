"""Forms for the mail account pages. They validate input only; saving goes through actions."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.template.defaultfilters import filesizeformat

from apps.accounts.models import ImapSecurity, MailAccount, Provider, SignatureMode

DEFAULT_MAX_UPLOAD_BYTES = 512 * 1024 * 1024
UPLOAD_SUFFIXES = (".mbox", ".mbx", ".eml", ".zip")


def max_upload_bytes() -> int:
    return int(getattr(settings, "MAILAGENT_MAX_UPLOAD_BYTES", DEFAULT_MAX_UPLOAD_BYTES))


def upload_too_large_message(size: int | None = None) -> str:
    limit = filesizeformat(max_upload_bytes())
    if size is None:
        return f"The upload is larger than {limit}, the most this server accepts. Import it from disk instead."
    return (
        f"That file is {filesizeformat(size)}; uploads may be at most {limit}. "
        "Import bigger archives from disk with `manage.py import_mail`."
    )


class ImapAccountForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="Short name shown in the mailbox.")
    address = forms.EmailField(max_length=320, label="Email address")
    host = forms.CharField(max_length=255, label="IMAP server")
    port = forms.IntegerField(min_value=1, max_value=65535, initial=993)
    security = forms.ChoiceField(choices=ImapSecurity.choices, initial=ImapSecurity.SSL)
    username = forms.CharField(max_length=320, required=False, help_text="Leave empty to use the email address.")
    password = forms.CharField(widget=forms.PasswordInput(render_value=False), max_length=1000, strip=False)
    skip_check = forms.BooleanField(
        required=False,
        label="Save without checking the connection",
        help_text="Otherwise the server is asked first, and nothing is saved if it refuses.",
    )

    def __init__(self, *args: Any, owner: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.owner = owner

    def clean_name(self) -> str:
        name = str(self.cleaned_data["name"]).strip()
        if not name:
            raise forms.ValidationError("Give the account a name.")
        if MailAccount.objects.filter(owner=self.owner, name=name).exists():
            raise forms.ValidationError("You already have an account with this name.")
        return name

    def clean_host(self) -> str:
        host = str(self.cleaned_data["host"]).strip()
        if not host or any(char.isspace() for char in host) or "/" in host:
            raise forms.ValidationError("Enter a host name such as imap.example.com.")
        return host


class ImportUploadForm(forms.Form):
    file = forms.FileField(
        label="Archive",
        help_text="An .mbox file, a single .eml message, or a .zip of .eml files, mbox files or Maildir folders.",
    )
    account = forms.ModelChoiceField(
        queryset=MailAccount.objects.none(),
        required=False,
        empty_label="— new local account —",
        label="Import into",
    )
    new_account_name = forms.CharField(max_length=100, required=False, label="New account name")
    route_through_filters = forms.BooleanField(
        required=False,
        initial=False,
        label="Route the imported mail through my filters",
        help_text="Off: the mail is stored and searchable, and only mail dated after a filter was made is routed "
        "(an old archive starts no runs). On: every imported email goes through your filters, whatever its date, "
        "and may start director runs.",
    )

    def __init__(self, *args: Any, owner: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.owner = owner
        account_field = self.fields["account"]
        assert isinstance(account_field, forms.ModelChoiceField)
        account_field.queryset = MailAccount.objects.filter(owner=owner, provider=Provider.LOCAL).order_by("name")

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        if upload.size is not None and upload.size > max_upload_bytes():
            raise forms.ValidationError(upload_too_large_message(upload.size))
        name = (upload.name or "").lower()
        if not (name.endswith(UPLOAD_SUFFIXES) or name.rsplit("/", 1)[-1] == "mbox"):
            raise forms.ValidationError("Upload an .mbox, .eml or .zip file.")
        return upload

    def clean_new_account_name(self) -> str:
        return str(self.cleaned_data.get("new_account_name") or "").strip()

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        account = cleaned.get("account")
        new_name = cleaned.get("new_account_name") or ""
        if account is None and not new_name and "account" not in self.errors:
            self.add_error("new_account_name", "Choose a local account or name a new one.")
        elif account is not None and new_name:
            self.add_error("new_account_name", "Choose an existing account or a new name, not both.")
        elif account is None and new_name:
            existing = MailAccount.objects.filter(owner=self.owner, name=new_name).first()
            if existing is not None and existing.provider != Provider.LOCAL:
                self.add_error(
                    "new_account_name",
                    f"“{new_name}” is a {existing.get_provider_display()} account; imports go into local accounts.",
                )
        return cleaned


class SignatureForm(forms.Form):
    mode = forms.ChoiceField(choices=SignatureMode.choices, widget=forms.RadioSelect, label="Signature")
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}), required=False, strip=False, max_length=10000)


class EnabledForm(forms.Form):
    enabled = forms.BooleanField(required=False)
