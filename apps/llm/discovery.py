"""Model servers already running on this machine: Ollama, llama.cpp's server, LM Studio and vLLM on their
default loopback ports, with the models each one lists.

Used by the setup wizard and Settings → Models ("found Ollama at 127.0.0.1:11434 with 3 models"). Loopback
only, a short timeout, all ports at once: a closed port refuses at once, so the look costs about one round
trip. A server is reported only when it answers its model-list API with the expected JSON, so another web
server on one of these ports (this app on :8000, say) is not mistaken for a model server.
"""

from __future__ import annotations

import ipaddress
import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

DISCOVERY_TIMEOUT_SECONDS = 0.8
MAX_MODELS = 50
MAX_BODY = 2_000_000

# (kind, label, host:port) tried by default; `LLM_LOCAL_ENDPOINTS` in settings (the environment's
# MAILAGENT_LOCAL_ENDPOINTS) replaces the list.
DEFAULT_LOCAL_ENDPOINTS: tuple[tuple[str, str, str], ...] = (
    ("ollama", "Ollama", "127.0.0.1:11434"),
    ("llamacpp", "llama.cpp server", "127.0.0.1:8080"),
    ("lmstudio", "LM Studio", "127.0.0.1:1234"),
    ("vllm", "vLLM", "127.0.0.1:8000"),
)


@dataclass(frozen=True, slots=True)
class LocalEndpoint:
    kind: str  # "ollama", "llamacpp", "lmstudio", "vllm"
    label: str  # "Ollama"
    address: str  # "127.0.0.1:11434"
    base_url: str  # the OpenAI-compatible base URL to store: "http://127.0.0.1:11434/v1"
    models: tuple[str, ...]

    @property
    def summary(self) -> str:
        count = len(self.models)
        return f"found {self.label} at {self.address} with {count} model{'' if count == 1 else 's'}"


def _get_json(url: str, timeout: float) -> Any:
    """The JSON an URL answers with, or None (refused, timed out, not 200, not JSON)."""
    if not url.startswith("http://"):
        return None
    request = urllib.request.Request(url, headers={"Accept": "application/json"})  # noqa: S310 - http only
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - http only
            if response.status != 200:
                return None
            return json.loads(response.read(MAX_BODY) or b"null")
    except (OSError, ValueError, urllib.error.URLError):
        return None


def _openai_models(address: str, timeout: float) -> list[str] | None:
    """Model ids from GET /v1/models (the OpenAI shape: {"data": [{"id": …}]}), or None if not that API."""
    data = _get_json(f"http://{address}/v1/models", timeout)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        return None
    return [str(m["id"]) for m in data["data"] if isinstance(m, dict) and m.get("id")][:MAX_MODELS]


def _ollama_models(address: str, timeout: float) -> list[str] | None:
    """Model names from Ollama's own GET /api/tags ({"models": [{"name": …}]}), or None."""
    data = _get_json(f"http://{address}/api/tags", timeout)
    if not isinstance(data, dict) or not isinstance(data.get("models"), list):
        return None
    names = [str(m.get("name") or m.get("model") or "") for m in data["models"] if isinstance(m, dict)]
    return [name for name in names if name][:MAX_MODELS]


def _probe(kind: str, label: str, address: str, timeout: float) -> LocalEndpoint | None:
    models = _ollama_models(address, timeout) if kind == "ollama" else None
    openai_models = _openai_models(address, timeout)
    if models is None and openai_models is None:
        return None
    if models is None:
        models = openai_models or []
    elif openai_models:  # Ollama lists the same models on both; keep /api/tags' order, add any extra
        models = [*models, *(name for name in openai_models if name not in models)]
    return LocalEndpoint(kind, label, address, f"http://{address}/v1", tuple(models))


def candidates() -> list[tuple[str, str, str]]:
    configured = getattr(settings, "LLM_LOCAL_ENDPOINTS", None)
    if configured is None:
        return list(DEFAULT_LOCAL_ENDPOINTS)
    labels = {kind: label for kind, label, _ in DEFAULT_LOCAL_ENDPOINTS}
    return [
        (str(kind), str(label or labels.get(kind, "Model server")), str(address)) for kind, label, address in configured
    ]


def discover_local_endpoints(*, timeout: float = DISCOVERY_TIMEOUT_SECONDS) -> list[LocalEndpoint]:
    """Every local model server that answers, in the order of `candidates()`; all probed in parallel."""
    entries = candidates()
    if not entries:
        return []
    with ThreadPoolExecutor(max_workers=len(entries), thread_name_prefix="discover") as pool:
        found = list(pool.map(lambda entry: _probe(entry[0], entry[1], entry[2], timeout), entries))
    return [endpoint for endpoint in found if endpoint is not None]


def is_loopback_url(base_url: str) -> bool:
    """Whether a base URL points at this machine (then CPU-friendly defaults suit it)."""
    try:
        host = (urlsplit(base_url.strip()).hostname or "").lower()
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# Host names that mean "a machine of mine": Docker's name for the host (Ollama outside the container), mDNS.
LOCAL_HOST_NAMES = ("localhost", "host.docker.internal")
LOCAL_HOST_SUFFIXES = (".localhost", ".local")


def is_local_url(base_url: str) -> bool:
    """Whether a base URL points at this machine or the local network (a private address: 10/8, 172.16/12,
    192.168/16, fc00::/7; Docker's host; an mDNS .local name): a model server there is usually the user's own
    hardware, often a CPU, so the setup forms offer the CPU-friendly defaults (apps/setup/forms.py)."""
    if is_loopback_url(base_url):
        return True
    try:
        host = (urlsplit(base_url.strip()).hostname or "").lower()
    except ValueError:
        return False
    if host in LOCAL_HOST_NAMES or host.endswith(LOCAL_HOST_SUFFIXES):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_private and not (address.is_link_local or address.is_unspecified or address.is_reserved)


def local_server(base_url: str) -> str:
    """ "host:port" of a model server on this machine or the local network (is_local_url), else "". Every
    configuration that reaches it (another user's, another model's, Ask's environment model) shares one
    machine's cores, so they share one generation queue (apps/llm/configs.py, concurrency_key)."""
    if not is_local_url(base_url):
        return ""
    try:
        parts = urlsplit(base_url.strip())
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return ""
    host = (parts.hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        host = "127.0.0.1"  # one server however it is named here
    return f"{host}:{port}"
