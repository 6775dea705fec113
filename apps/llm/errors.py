"""Model-call failures in words: which endpoint, what it answered, and what the user should do next.

"APIConnectionError: Connection error." told nobody where the run tried to go. Every LLMError message is
built here from the endpoint (provider guessed from the URL, the configuration's name), the HTTP status and
the failure category, e.g. "Ollama at http://127.0.0.1:11434/v1 refused the connection: is it running?".
"""

from __future__ import annotations

import socket
from typing import Literal
from urllib.parse import urlsplit

DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_PROVIDER_MESSAGE = 300


def endpoint_url(base_url: str) -> str:
    return (base_url or DEFAULT_BASE_URL).rstrip("/")


def provider_label(base_url: str) -> str:
    """The kind of server behind a base URL, from its host and port (the defaults each product ships with)."""
    parts = urlsplit(endpoint_url(base_url))
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    if host == "api.openai.com":
        return "OpenAI"
    if host.endswith((".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")):
        return "Azure OpenAI"
    if port == 11434:
        return "Ollama"
    if port == 1234:
        return "LM Studio"
    return "The OpenAI-compatible endpoint"


def endpoint_name(base_url: str, config_name: str = "") -> str:
    """'Ollama at http://127.0.0.1:11434/v1' (plus the configuration's name when there is one)."""
    label = f"{provider_label(base_url)} at {endpoint_url(base_url)}"
    return f"{label} (API config “{config_name}”)" if config_name else label


def refusal_kind(exc: BaseException) -> Literal["refused", "unresolvable"] | None:
    """'refused' when nothing listens on the port, 'unresolvable' when the host name does not resolve: both
    fail the same way on every retry, so they are not retried. None for anything else."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return "refused"
        if isinstance(current, socket.gaierror):
            return "unresolvable"
        for arg in getattr(current, "args", ()):
            if isinstance(arg, ConnectionRefusedError):
                return "refused"
            if isinstance(arg, socket.gaierror):
                return "unresolvable"
        current = current.__cause__ or current.__context__
    return None


def provider_message(exc: BaseException) -> str:
    """The provider's own words for an HTTP error (its JSON `error.message` when it sent one)."""
    body = getattr(exc, "body", None)
    text = ""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            text = str(inner.get("message") or "")
        elif isinstance(inner, str):
            text = inner
    if not text:
        text = str(getattr(exc, "message", "") or exc)
    text = " ".join(text.split())
    return text[:MAX_PROVIDER_MESSAGE] + ("…" if len(text) > MAX_PROVIDER_MESSAGE else "")


def describe_failure(
    exc: BaseException,
    *,
    category: str,
    status: int | None,
    base_url: str,
    model: str,
    timeout: float,
    config_name: str = "",
) -> str:
    """One sentence: the endpoint, what happened (with the HTTP status when there was one), the next step."""
    where = endpoint_name(base_url, config_name)
    host = urlsplit(endpoint_url(base_url)).hostname or endpoint_url(base_url)
    import openai  # loaded by the call that failed; not at import (apps/llm/client.py says why)

    said = provider_message(exc) if isinstance(exc, openai.APIStatusError) else ""
    quoted = f": “{said}”" if said else ""
    if category == "refused":
        hint = "is it running (ollama serve)?" if provider_label(base_url) == "Ollama" else "is it running?"
        return f"{where} refused the connection: {hint} Check the host and port of the base URL."
    if category == "unresolvable":
        return f"{where}: the host name “{host}” does not resolve. Check the base URL for a typo."
    if category == "connection":
        return f"{where} could not be reached ({exc}). Check the base URL and the network."
    if category == "timeout":
        return f"{where} did not answer within {timeout:g} s. Raise the timeout, or check the server's load."
    if category == "auth":
        if status == 403:
            return f"{where} denied access (HTTP 403){quoted}. The API key lacks access to the model “{model}”."
        return f"{where} rejected the API key (HTTP {status or 401}){quoted}. Enter a valid API key."
    if category == "rate_limited":
        return (
            f"{where} is rate limiting (HTTP {status or 429}){quoted}. "
            "Wait and run again, or lower the config's concurrency."
        )
    if category == "server":
        return f"{where} failed with HTTP {status}{quoted}. The server has a problem; try again later."
    if category == "bad_request" and status == 404:
        return (
            f"{where} answered HTTP 404{quoted}. Check that the base URL ends where the API starts "
            f"(usually /v1) and that the model “{model}” exists there."
        )
    if category == "bad_request":
        return f"{where} rejected the request (HTTP {status}){quoted}. Check the model name “{model}”."
    detail = f"HTTP {status}" if status else type(exc).__name__
    return f"{where} failed ({detail}: {provider_message(exc)})."
