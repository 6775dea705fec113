"""The IMAP connection: login (SSL or STARTTLS) with timeouts, one session per operation, and imapclient
or socket failures translated into categorised ProviderErrors."""

from __future__ import annotations

import errno
import logging
import socket
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from imapclient import IMAPClient, SocketTimeout
from imapclient.exceptions import IMAPClientAbortError, IMAPClientError, LoginError

from apps.accounts.models import ImapSecurity, MailAccount
from apps.accounts.providers.base import MailProvider, ProviderError

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_SECONDS = 30.0
READ_TIMEOUT_SECONDS = 120.0


class ImapConnection(MailProvider):
    def __init__(self, account: MailAccount) -> None:
        super().__init__(account)
        self._client: IMAPClient | None = None

    # -- connection ------------------------------------------------------------------------------------

    def _connect(self) -> IMAPClient:
        account = self.account
        if not account.imap_host:
            raise ProviderError("No IMAP server is configured for this account", category="other")
        security = account.imap_security or ImapSecurity.SSL
        port = account.imap_port or (993 if security == ImapSecurity.SSL else 143)
        password = str((account.credentials or {}).get("password") or "")
        username = account.imap_username or account.address
        context = ssl.create_default_context()
        timeout = SocketTimeout(connect=CONNECT_TIMEOUT_SECONDS, read=READ_TIMEOUT_SECONDS)
        with _imap_errors(account.imap_host, port):
            client = IMAPClient(
                account.imap_host,
                port=port,
                ssl=security == ImapSecurity.SSL,
                ssl_context=context,
                timeout=timeout,
            )
            self._client = client
            if security == ImapSecurity.STARTTLS:
                client.starttls(context)
            client.login(username, password)
        return client

    def connect(self) -> IMAPClient:
        """A logged-in connection (closed by `close()`), for callers that hold it open, such as IDLE."""
        with _imap_errors(self.account.imap_host, self.account.imap_port):
            return self._connect()

    def close(self) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        try:
            client.logout()
        except Exception:
            try:
                client.shutdown()
            except Exception:
                logger.debug("IMAP connection for account %s was already closed", self.account.pk)

    @contextmanager
    def _session(self) -> Iterator[IMAPClient]:
        try:
            client = self._connect()
            with _imap_errors(self.account.imap_host, self.account.imap_port):
                yield client
        finally:
            self.close()

    # -- MailProvider ----------------------------------------------------------------------------------

    def test_connection(self) -> None:
        with self._session() as client:
            client.noop()


@contextmanager
def _imap_errors(host: str, port: Any) -> Iterator[None]:
    """Translate imapclient/socket failures into categorised ProviderErrors; everything else passes through."""
    where = f"{host}:{port}"
    try:
        yield
    except ProviderError:
        raise
    except LoginError as exc:
        detail = str(exc)
        if "UNAVAILABLE" in detail.upper():
            raise ProviderError(
                f"IMAP server {where} is temporarily unavailable: {detail}", category="network"
            ) from exc
        raise ProviderError(f"IMAP login to {where} failed: {detail}", category="auth") from exc
    except IMAPClientAbortError as exc:
        raise ProviderError(f"IMAP connection to {where} was dropped: {exc}", category="network") from exc
    except TimeoutError as exc:
        raise ProviderError(f"IMAP server {where} timed out", category="network") from exc
    except ssl.SSLError as exc:
        raise ProviderError(f"TLS with IMAP server {where} failed: {exc}", category="network") from exc
    except IMAPClientError as exc:
        raise ProviderError(f"IMAP error from {where}: {exc}", category="other") from exc
    except OSError as exc:
        # Only socket-level failures are "network"; a local OSError (disk, permissions) is something else.
        category = "network" if _is_network_error(exc) else "other"
        raise ProviderError(f"Cannot talk to IMAP server {where}: {exc}", category=category) from exc


NETWORK_ERRNOS = {
    errno.ENETUNREACH,
    errno.EHOSTUNREACH,
    errno.ENETDOWN,
    errno.EHOSTDOWN,
    errno.EADDRNOTAVAIL,
    errno.EPIPE,
}


def _is_network_error(exc: OSError) -> bool:
    return isinstance(exc, ConnectionError | socket.gaierror | socket.herror) or exc.errno in NETWORK_ERRNOS
