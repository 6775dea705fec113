from __future__ import annotations

from django import forms

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
    expires = forms.TypedChoiceField(
        choices=EXPIRY_CHOICES, required=False, coerce=int, empty_value=None, label="Expires"
    )
