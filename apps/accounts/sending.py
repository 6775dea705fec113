"""Sending one RFC 822 message through an account's provider: Gmail API, Microsoft Graph, or SMTP for IMAP.

Nothing here decides *whether* to send: callers (the replies app, after the user pressed Send and
confirmed) do. Agents, Ask and tools never import this module.

Every failure leaves as a ProviderError whose message says what happened; `SendPermissionMissing` means the
OAuth grant lacks the send scope and the user must consent first (incremental consent).
"""

from __future__ import annotations

import smtplib
import ssl
from dataclasses import dataclass, field

from apps.accounts import oauth
from apps.accounts.models import ImapSecurity, MailAccount, MailFolder, Provider
from apps.accounts.providers.base import ProviderError

SMTP_TIMEOUT_SECONDS = 60.0
DEFAULT_SMTP_PORTS = {ImapSecurity.SSL: 465, ImapSecurity.STARTTLS: 587, ImapSecurity.NONE: 25}


class SendPermissionMissing(ProviderError):
    """The account's OAuth grant does not include the send scope yet."""

    def __init__(self, account: MailAccount) -> None:
        provider = "Google" if account.provider == Provider.GMAIL else "Microsoft"
        super().__init__(
            f"{provider} has not allowed mailagent to send from {account.address} yet; give permission and send again",
            category="auth",
        )


@dataclass(slots=True)
class SentMessage:
    provider_id: str = ""  # the provider's id of the sent copy, when it says (Gmail); "" otherwise
    provider_thread_id: str = ""
    folder: str = ""  # MailFolder.name of the account's sent folder, when known
    labels: list[str] = field(default_factory=list)


def sending_problem(account: MailAccount) -> str:
    """Why this account cannot send at all (not a permission the user can grant in one click), or ""."""
    if account.provider == Provider.LOCAL:
        return "This is a local import: it has no mail server to send through. Reply from a connected account."
    if account.provider == Provider.IMAP and not account.smtp_host:
        return "No outgoing (SMTP) server is set up for this account yet."
    if not account.enabled:
        return "This account is disabled; enable it to send from it."
    return ""


def sent_folder_name(account: MailAccount) -> str:
    name = MailFolder.objects.filter(account=account, role="sent").values_list("name", flat=True).first()
    return str(name or "")


def send_message(
    *, account: MailAccount, raw: bytes, envelope_from: str, recipients: list[str], thread_id: str = ""
) -> SentMessage:
    problem = sending_problem(account)
    if problem:
        raise ProviderError(problem, category="other")
    if account.provider == Provider.GMAIL:
        return _send_gmail(account, raw, thread_id)
    if account.provider == Provider.OUTLOOK:
        return _send_graph(account, raw)
    return _send_smtp(account, raw, envelope_from=envelope_from, recipients=recipients)


def _send_gmail(account: MailAccount, raw: bytes, thread_id: str) -> SentMessage:
    from apps.accounts.providers.gmail.provider import GmailProvider

    if not oauth.can_send(account):
        raise SendPermissionMissing(account)
    provider = GmailProvider(account)
    try:
        sent = provider.send_raw(raw, thread_id=thread_id)
    except ProviderError as exc:
        if exc.category == "auth":  # 403 insufficientPermissions: the grant lost gmail.send
            raise SendPermissionMissing(account) from exc
        raise
    finally:
        provider.close()
    labels = [str(label) for label in sent.get("labelIds") or ["SENT"]]
    return SentMessage(
        provider_id=str(sent.get("id") or ""),
        provider_thread_id=str(sent.get("threadId") or thread_id),
        folder="SENT",
        labels=labels,
    )


def _send_graph(account: MailAccount, raw: bytes) -> SentMessage:
    from apps.accounts.providers.outlook import OutlookProvider

    if not oauth.can_send(account):
        raise SendPermissionMissing(account)
    provider = OutlookProvider(account)
    try:
        provider.send_mime(raw)
    except ProviderError as exc:
        # 403 from Graph, or the token endpoint's AADSTS65001 (consent_required) for Mail.Send: the user
        # has to grant it (again).
        if exc.category == "auth" or "AADSTS65001" in str(exc):
            raise SendPermissionMissing(account) from exc
        raise
    finally:
        provider.close()
    return SentMessage(folder=sent_folder_name(account))


def _send_smtp(account: MailAccount, raw: bytes, *, envelope_from: str, recipients: list[str]) -> SentMessage:
    host = account.smtp_host
    security = account.smtp_security or ImapSecurity.STARTTLS
    port = account.smtp_port or DEFAULT_SMTP_PORTS.get(ImapSecurity(security), 587)
    username = account.smtp_username
    password = str(account.smtp_password or "")
    context = ssl.create_default_context()
    where = f"{host}:{port}"
    try:
        client: smtplib.SMTP
        if security == ImapSecurity.SSL:
            client = smtplib.SMTP_SSL(host, port, timeout=SMTP_TIMEOUT_SECONDS, context=context)
        else:
            client = smtplib.SMTP(host, port, timeout=SMTP_TIMEOUT_SECONDS)
        with client:
            client.ehlo()
            if security == ImapSecurity.STARTTLS:
                client.starttls(context=context)
                client.ehlo()
            if username:
                client.login(username, password)
            refused = client.sendmail(envelope_from, recipients, raw)
    except smtplib.SMTPAuthenticationError as exc:
        raise ProviderError(f"The SMTP server {where} refused the login: {_smtp_text(exc)}", category="auth") from exc
    except smtplib.SMTPRecipientsRefused as exc:
        who = ", ".join(f"{address} ({_code_text(answer)})" for address, answer in exc.recipients.items())
        raise ProviderError(f"The SMTP server {where} refused every recipient: {who}", category="other") from exc
    except smtplib.SMTPSenderRefused as exc:
        raise ProviderError(
            f"The SMTP server {where} refused the sender {envelope_from}: {_smtp_text(exc)}", category="other"
        ) from exc
    except smtplib.SMTPNotSupportedError as exc:
        raise ProviderError(f"The SMTP server {where} does not support this: {exc}", category="other") from exc
    except smtplib.SMTPResponseException as exc:
        raise ProviderError(f"The SMTP server {where} answered {_smtp_text(exc)}", category="other") from exc
    except smtplib.SMTPException as exc:
        raise ProviderError(f"Sending through {where} failed: {exc}", category="network") from exc
    except ssl.SSLError as exc:
        raise ProviderError(f"TLS with the SMTP server {where} failed: {exc}", category="network") from exc
    except OSError as exc:  # refused, reset, DNS, timeouts
        raise ProviderError(f"Could not reach the SMTP server {where}: {exc}", category="network") from exc
    if refused:
        who = ", ".join(f"{address} ({_code_text(answer)})" for address, answer in refused.items())
        # Some recipients got it: the message is sent, the caller records who was refused.
        raise PartiallySent(
            f"Sent, but the SMTP server {where} refused: {who}", sent=SentMessage(folder=sent_folder_name(account))
        )
    return SentMessage(folder=sent_folder_name(account))


class PartiallySent(ProviderError):
    """Delivered to some recipients, refused for others: the message went out (do not send it again)."""

    def __init__(self, message: str, *, sent: SentMessage) -> None:
        super().__init__(message, category="other")
        self.sent = sent


def _smtp_text(exc: smtplib.SMTPResponseException) -> str:
    return _code_text((exc.smtp_code, exc.smtp_error))


def _code_text(answer: tuple[int, bytes | str]) -> str:
    code, text = answer
    message = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    return f"{code} {message}".strip()
