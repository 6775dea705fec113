"""Mail providers behind one interface (base.MailProvider); `get_provider(account)` picks the module."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from apps.accounts.models import MailAccount
    from apps.accounts.providers.base import MailProvider


def get_provider(account: MailAccount) -> MailProvider:
    from apps.accounts.models import Provider

    if account.provider == Provider.IMAP:
        from apps.accounts.providers.imap import ImapProvider

        return ImapProvider(account)
    if account.provider == Provider.GMAIL:
        from apps.accounts.providers.gmail import GmailProvider

        return GmailProvider(account)
    if account.provider == Provider.OUTLOOK:
        from apps.accounts.providers.outlook import OutlookProvider

        return OutlookProvider(account)
    from apps.accounts.providers.local import LocalProvider

    return LocalProvider(account)
