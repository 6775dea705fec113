"""Where a model may be called: the guard between a typed base URL and a request from this server.

A model's base URL is typed by the user, and this server then connects to it: without a guard, any user could
point a "model" at the cloud's metadata service or at an internal host and read the answers and timings
(the probe campaign of issue 32). Two rules:

- Nobody's model is called at a link-local, multicast, unspecified or reserved address (169.254.169.254 is
  where cloud metadata services answer; no model server lives there). Checked on the resolved addresses at
  every call, so a host name that later resolves there is refused too.
- When the administrator lists hosts in MAILAGENT_USER_MODEL_HOSTS (`host` or `host:port`, comma-separated),
  users who are not staff may only save, test and run models at those. Unset, any other host is allowed:
  a model on the user's own machine (Ollama, llama.cpp) is the point of a self-hosted install.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

from apps.llm.errors import endpoint_url

DEFAULT_PORTS = {"http": 80, "https": 443}


def _host_and_port(base_url: str) -> tuple[str, int | None]:
    parts = urlsplit(endpoint_url(base_url))
    try:
        port = parts.port or DEFAULT_PORTS.get(parts.scheme)
    except ValueError:  # a port that is not a number: the client reports the URL itself
        port = None
    return (parts.hostname or "").lower(), port


def _never_a_model(address: str) -> str:
    """Why no model may live at this IP address ("" when one may)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_link_local:
        return "a link-local address (where cloud metadata services answer)"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_unspecified:
        return "the unspecified address"
    if ip.is_reserved and not ip.is_loopback:  # ::1 sits inside the reserved ::/8
        return "a reserved address"
    return ""


def address_problem(base_url: str) -> str:
    """Why no model may be called at this URL's resolved addresses, or "" (also when the host does not
    resolve: the call then fails with the client's own "does not resolve" sentence)."""
    host, port = _host_and_port(base_url)
    if not host:
        return ""
    try:
        infos = socket.getaddrinfo(host, port or 0, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return ""
    for info in infos:
        reason = _never_a_model(str(info[4][0]))
        if reason:
            return f"{host} is {reason}; models are never called there."
    return ""


def _allowed_hosts() -> list[str]:
    return [entry.strip().lower() for entry in getattr(settings, "LLM_USER_MODEL_HOSTS", []) if entry.strip()]


def host_problem(base_url: str, *, user: object) -> str:
    """Why this user may not use a model at this URL, or "": the administrator's host list binds users who
    are not staff; the address rule binds everyone."""
    allowed = _allowed_hosts()
    if allowed and not getattr(user, "is_staff", False):
        host, port = _host_and_port(base_url)
        if host not in allowed and f"{host}:{port}" not in allowed:
            return (
                f"Models can only be added at {', '.join(allowed)} on this server (set by the administrator "
                "in MAILAGENT_USER_MODEL_HOSTS). Use one of those, or ask the administrator."
            )
    return address_problem(base_url)
