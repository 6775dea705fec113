from __future__ import annotations

from typing import Any

from django import forms

from apps.accounts.models import MailAccount
from apps.accounts.selectors import list_accounts_for_user
from apps.workspaces.models import McpScope

EXPIRY_CHOICES = [("", "Never"), ("7", "In 7 days"), ("30", "In 30 days"), ("90", "In 90 days"), ("365", "In a year")]


class MailboxTokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, label="Name", help_text="What uses it, e.g. Claude Desktop", widget=forms.TextInput()
    )
    scopes = forms.MultipleChoiceField(
        choices=McpScope.choices,
        initial=[McpScope.READ],
        widget=forms.CheckboxSelectMultiple,
        label="Scopes",
        help_text="act never sends by itself: each send or change waits for your approval in the Inbox.",
    )
    account: forms.ModelChoiceField[MailAccount] = forms.ModelChoiceField(
        queryset=MailAccount.objects.none(),
        required=False,
        empty_label="All your accounts",
        label="Mail of",
        help_text="A token for one account reads, drafts and acts only there (the library stays readable).",
    )
    folders = forms.CharField(
        required=False,
        max_length=2000,
        label="Only these folders",
        help_text="Optional, with an account: folder names as the mailbox lists them, comma-separated (their "
        "subfolders too), e.g. Receipts, Clients. Search, reading and requests then reach only mail placed "
        "there; ask is not offered (it reads the whole account).",
    )
    expires = forms.TypedChoiceField(
        choices=EXPIRY_CHOICES, required=False, coerce=int, empty_value=None, label="Expires"
    )

    def clean_folders(self) -> list[str]:
        return [name.strip() for name in str(self.cleaned_data.get("folders") or "").split(",") if name.strip()]

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["account"].queryset = list_accounts_for_user(user=user)  # type: ignore[attr-defined]
