"""Local model servers found on loopback (apps.llm.discovery), against real HTTP servers on free ports: an
Ollama-shaped one (/api/tags), the OpenAI-compatible fake (as llama.cpp's server would answer /v1/models),
a closed port, a web server that is not a model server, and one that never answers in time."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from django.test import override_settings

from apps.llm.discovery import (
    DEFAULT_LOCAL_ENDPOINTS,
    discover_local_endpoints,
    is_local_url,
    is_loopback_url,
    local_server,
)
from tests.fakes.ollama_server import FakeOllama, NotAModelServer
from tests.fakes.openai_server import FakeOpenAI
from tests.services import free_port

OLLAMA_MODELS = ["llama3.2:3b", "qwen2.5:1.5b", "smollm2:135m"]


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with FakeOllama(OLLAMA_MODELS) as server:
        yield server  # type: ignore[misc]


def test_the_default_ports_are_the_runtimes_own() -> None:
    assert [(kind, address) for kind, _, address in DEFAULT_LOCAL_ENDPOINTS] == [
        ("ollama", "127.0.0.1:11434"),
        ("llamacpp", "127.0.0.1:8080"),
        ("lmstudio", "127.0.0.1:1234"),
        ("vllm", "127.0.0.1:8000"),
    ]


def test_running_servers_are_found_with_their_models_and_others_are_not(ollama: FakeOllama) -> None:
    with FakeOpenAI() as llamacpp, NotAModelServer() as web:
        closed = free_port()
        endpoints = [
            ("ollama", "Ollama", f"127.0.0.1:{ollama.port}"),
            ("llamacpp", "llama.cpp server", f"127.0.0.1:{llamacpp.port}"),
            ("lmstudio", "LM Studio", f"127.0.0.1:{closed}"),
            ("vllm", "vLLM", f"127.0.0.1:{web.port}"),
        ]
        with override_settings(LLM_LOCAL_ENDPOINTS=endpoints):
            found = discover_local_endpoints()
        assert web.calls("GET", "/v1/models") == 1  # asked, but HTML is no model list
    assert [(e.kind, e.address, e.base_url, e.models) for e in found] == [
        ("ollama", f"127.0.0.1:{ollama.port}", f"http://127.0.0.1:{ollama.port}/v1", tuple(OLLAMA_MODELS)),
        ("llamacpp", f"127.0.0.1:{llamacpp.port}", f"http://127.0.0.1:{llamacpp.port}/v1", ("fake-model",)),
    ]
    assert found[0].summary == f"found Ollama at 127.0.0.1:{ollama.port} with 3 models"
    assert found[1].summary == f"found llama.cpp server at 127.0.0.1:{llamacpp.port} with 1 model"
    assert ollama.calls("GET", "/api/tags") == 1 and ollama.calls("GET", "/v1/models") == 1


def test_a_server_that_does_not_answer_in_time_is_skipped_quickly(ollama: FakeOllama) -> None:
    with FakeOllama(["slow:1b"], hang=3.0) as slow:
        endpoints = [("ollama", "Ollama", f"127.0.0.1:{slow.port}"), ("vllm", "vLLM", f"127.0.0.1:{ollama.port}")]
        started = time.monotonic()
        with override_settings(LLM_LOCAL_ENDPOINTS=endpoints):
            found = discover_local_endpoints(timeout=0.3)
        elapsed = time.monotonic() - started
    # The hanging server is dropped; the ports are probed at once, so the look costs about one timeout, not
    # one per request (a deadline with a wide margin, not a timing benchmark).
    assert [e.address for e in found] == [f"127.0.0.1:{ollama.port}"]
    assert elapsed < 2.5


def test_no_servers_no_endpoints() -> None:
    with override_settings(LLM_LOCAL_ENDPOINTS=[("ollama", "Ollama", f"127.0.0.1:{free_port()}")]):
        assert discover_local_endpoints() == []


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:11434/v1", True),
        ("http://localhost:8080/v1", True),
        ("http://[::1]:8000/v1", True),
        ("https://api.openai.com/v1", False),
        ("http://127.example.com/v1", False),
        ("", False),
    ],
)
def test_loopback_urls(url: str, loopback: bool) -> None:
    assert is_loopback_url(url) is loopback


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:11434/v1", True),
        ("http://192.168.1.20:11434/v1", True),
        ("http://10.0.0.5:8080/v1", True),
        ("http://172.20.0.3:8000/v1", True),
        ("http://[fd12:3456::1]:11434/v1", True),
        ("http://host.docker.internal:11434/v1", True),
        ("http://gpu-box.local:1234/v1", True),
        ("http://172.32.0.1:8000/v1", False),  # outside 172.16/12
        ("http://169.254.169.254/v1", False),  # link-local: never a model (apps/llm/endpoints.py)
        ("http://8.8.8.8/v1", False),
        ("https://api.openai.com/v1", False),
        ("https://example.local.evil.com/v1", False),
        ("", False),
    ],
)
def test_local_network_urls_get_the_cpu_defaults(url: str, local: bool) -> None:
    assert is_local_url(url) is local


def test_the_environment_can_point_discovery_at_other_ports(ollama: FakeOllama) -> None:
    import subprocess
    import sys

    from tests.services import REPO_ROOT, subprocess_env

    # The setting is read from MAILAGENT_LOCAL_ENDPOINTS in the process that serves the pages.
    code = (
        "import django; django.setup(); from apps.llm.discovery import candidates, discover_local_endpoints; "
        "print(candidates()); print([e.summary for e in discover_local_endpoints()])"
    )
    env = subprocess_env(MAILAGENT_LOCAL_ENDPOINTS=f"ollama=127.0.0.1:{ollama.port}, vllm=127.0.0.1:{free_port()}")
    env["DJANGO_SETTINGS_MODULE"] = "mailagent.settings"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0].startswith(f"[('ollama', 'Ollama', '127.0.0.1:{ollama.port}'), ('vllm', 'vLLM', ")
    assert out[1] == f"['found Ollama at 127.0.0.1:{ollama.port} with 3 models']"


@pytest.mark.parametrize(
    ("url", "server"),
    [
        ("http://127.0.0.1:11434/v1", "127.0.0.1:11434"),
        ("http://localhost:11434/v1", "127.0.0.1:11434"),  # one server however it is named here
        ("http://192.168.1.20/v1", "192.168.1.20:80"),
        ("https://api.openai.com/v1", ""),
    ],
)
def test_a_local_servers_address_names_its_queue(url: str, server: str) -> None:
    assert local_server(url) == server
