"""A model configuration created without a timeout or a concurrency limit gets the ones that suit its endpoint:
a server on this machine or the local network (usually a CPU that serves one generation at a time) 300 s and
one request at a time across the app; a cloud endpoint 60 s and 4, as before."""

from __future__ import annotations

from typing import Any

import pytest

from apps.llm.actions import create_api_config

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("http://127.0.0.1:11434/v1", (300, 1)),
        ("http://192.168.1.20:8080/v1", (300, 1)),
        ("http://host.docker.internal:11434/v1", (300, 1)),
        ("https://api.openai.com/v1", (60, 4)),
        ("", (60, 4)),  # empty: OpenAI
    ],
)
def test_left_out_limits_suit_the_endpoint(user: Any, base_url: str, expected: tuple[int, int]) -> None:
    config = create_api_config(owner=user, name="model", base_url=base_url, api_key="", model="m")
    assert (config.timeout_seconds, config.max_concurrency) == expected


def test_given_limits_are_kept(user: Any) -> None:
    config = create_api_config(
        owner=user,
        name="gpu",
        base_url="http://10.0.0.7:8000/v1",
        api_key="",
        model="m",
        timeout_seconds=30,
        max_concurrency=8,
    )
    assert (config.timeout_seconds, config.max_concurrency) == (30, 8)
