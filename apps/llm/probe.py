""" "Test connection": one real chat call asking for a single token, with the outcome in words.

Used by the settings pages and the first-run wizard (apps/setup) and by any page that lets a user pick a
model. No retries: the user is waiting, and a refused connection or a wrong key fails the same way twice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from apps.llm.client import LLMConfig, LLMError, chat
from apps.llm.errors import endpoint_name

PROBE_TIMEOUT_SECONDS = 20.0


@dataclass(frozen=True, slots=True)
class ProbeResult:
    ok: bool
    message: str  # the sentence to show: what worked, or endpoint + status + what to fix
    endpoint: str  # "Ollama at http://127.0.0.1:11434/v1"
    model: str
    category: str = ""  # LLMError category on failure ("refused", "auth", …); "" on success
    status: int | None = None  # HTTP status the server answered with, when it answered
    latency_ms: int = 0
    reply: str = ""  # what the model said (one token), for the curious


def _probe_config(key: str, *, base_url: str, api_key: str, model: str, timeout: float, name: str) -> LLMConfig:
    """A one-off config for a probe: no retries, one request at a time, a short timeout, no cached client."""
    return LLMConfig(
        key=key,
        base_url=base_url,
        api_key=api_key,
        model=model.strip(),
        timeout=min(float(timeout), PROBE_TIMEOUT_SECONDS),
        max_concurrency=1,
        max_retries=0,
        name=name,
        cache_client=False,
    )


def test_connection(
    *,
    base_url: str,
    api_key: str,
    model: str,
    timeout: float = PROBE_TIMEOUT_SECONDS,
    name: str = "",
) -> ProbeResult:
    """Send one chat message with max_tokens=1 to the endpoint and report what happened."""
    endpoint = endpoint_name(base_url, name)
    if not model.strip():
        return ProbeResult(
            ok=False, message="Enter a model name first (e.g. gpt-4o-mini or llama3.2).", endpoint=endpoint, model=""
        )
    config = _probe_config("probe", base_url=base_url, api_key=api_key, model=model, timeout=timeout, name=name)
    started = time.monotonic()
    try:
        result = chat(config, [{"role": "user", "content": "Reply with the single word OK."}], max_tokens=1)
    except LLMError as exc:
        return ProbeResult(
            ok=False,
            message=str(exc),
            endpoint=endpoint,
            model=config.model,
            category=exc.category,
            status=exc.status,
            latency_ms=int((time.monotonic() - started) * 1000),
        )
    return ProbeResult(
        ok=True,
        message=f"{endpoint} answered with the model “{result.model}” in {result.latency_ms} ms.",
        endpoint=endpoint,
        model=result.model,
        status=200,
        latency_ms=result.latency_ms,
        reply=(result.content or "").strip()[:100],
    )


test_connection.__test__ = False  # type: ignore[attr-defined]  # not a pytest test despite its name

SPEED_MAX_TOKENS = 32
SPEED_PROMPT = "Count from 1 to 30 in digits, separated by spaces."


@dataclass(frozen=True, slots=True)
class SpeedResult:
    ok: bool
    message: str  # "about 14.2 tokens/s (32 tokens in 2.25 s, prompt processing included)" or why not
    tokens_per_second: float = 0.0
    completion_tokens: int = 0
    elapsed_ms: int = 0


def measure_speed(
    *,
    base_url: str,
    api_key: str,
    model: str,
    timeout: float = PROBE_TIMEOUT_SECONDS,
    name: str = "",
) -> SpeedResult:
    """One short real generation: completion tokens (the server's own count, from `usage`) over the wall time
    of the request. Honest rather than flattering: the time includes reading the prompt, as every real call
    does; a server that reports no usage gets no number."""
    config = _probe_config("probe-speed", base_url=base_url, api_key=api_key, model=model, timeout=timeout, name=name)
    started = time.monotonic()
    try:
        result = chat(config, [{"role": "user", "content": SPEED_PROMPT}], max_tokens=SPEED_MAX_TOKENS, temperature=0)
    except LLMError as exc:
        return SpeedResult(ok=False, message=f"Speed not measured: {exc}")
    elapsed = max(time.monotonic() - started, 1e-3)
    tokens = int(result.usage.get("completion_tokens") or 0)
    if tokens <= 0:
        return SpeedResult(
            ok=False,
            message="Speed not measured: the server reported no token usage.",
            elapsed_ms=round(elapsed * 1000),
        )
    rate = tokens / elapsed
    return SpeedResult(
        ok=True,
        message=(
            f"about {rate:.1f} tokens/s ({tokens} token{'' if tokens == 1 else 's'} in {elapsed:.2f} s, "
            "prompt processing included)"
        ),
        tokens_per_second=rate,
        completion_tokens=tokens,
        elapsed_ms=round(elapsed * 1000),
    )
