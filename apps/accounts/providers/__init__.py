"""Mail providers behind one interface (base.MailProvider); `get_provider(account)` picks the class by kind."""

from __future__ import annotations

from apps.accounts.models import MailAccount, Provider
from apps.accounts.providers.base import MailProvider
from apps.accounts.providers.gmail.provider import GmailProvider
from apps.accounts.providers.imap.provider import ImapProvider
from apps.accounts.providers.local import LocalProvider
from apps.accounts.providers.outlook import OutlookProvider

PROVIDERS: dict[str, type[MailProvider]] = {
    Provider.IMAP: ImapProvider,
    Provider.GMAIL: GmailProvider,
    Provider.OUTLOOK: OutlookProvider,
}


def get_provider(account: MailAccount) -> MailProvider:
    return PROVIDERS.get(account.provider, LocalProvider)(account)
