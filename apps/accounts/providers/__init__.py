"""Mail providers behind one interface (base.MailProvider); `get_provider(account)` picks the class by kind.

A provider's module is imported the first time an account of its kind needs it: the IMAP client, the HTTP
stack of Gmail and Outlook and the HTML parsers they bring (~40 MB) stay out of the processes that never talk
to a mail server (issue 40: the cluster's sentinel, pusher and monitor, an idle web process)."""

from __future__ import annotations

from importlib import import_module

from apps.accounts.models import MailAccount, Provider
from apps.accounts.providers.base import MailProvider

PROVIDERS: dict[str, str] = {
    Provider.IMAP: "apps.accounts.providers.imap.provider.ImapProvider",
    Provider.GMAIL: "apps.accounts.providers.gmail.provider.GmailProvider",
    Provider.OUTLOOK: "apps.accounts.providers.outlook.OutlookProvider",
}
LOCAL_PROVIDER = "apps.accounts.providers.local.LocalProvider"


def provider_class(kind: str) -> type[MailProvider]:
    module_name, _, class_name = PROVIDERS.get(kind, LOCAL_PROVIDER).rpartition(".")
    provider: type[MailProvider] = getattr(import_module(module_name), class_name)
    return provider


def get_provider(account: MailAccount) -> MailProvider:
    return provider_class(account.provider)(account)
