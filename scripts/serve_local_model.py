"""Serve a GGUF model file with llama.cpp's server (the `xllamacpp` wheel) on loopback, OpenAI-compatible,
with the settings mailagent's tool loop needs on a CPU. `make local-model GGUF=path` runs it; so does
bench/local_model.py, so the bench measures what this serves.

    .venv/bin/python scripts/serve_local_model.py MODEL.gguf [--port 8080] [--threads N] [--ctx 8192]

Serves until Ctrl-C or SIGTERM. Only 127.0.0.1: the server has no API key.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

# OpenMP's default ACTIVE wait policy spins idle threads; on a busy 2-core machine generation on 2 threads
# then fell from ~50 to 4 to 11 tokens/s (issue 39). libgomp reads it when the library loads: set it before
# xllamacpp is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

HOST = "127.0.0.1"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("gguf", type=Path, help="the model file (.gguf)")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2, help="default: every core")
    parser.add_argument("--ctx", type=int, default=8192, help="context window in tokens")
    parser.add_argument("--alias", default="", help="the model name clients use (default: the file's name)")
    parser.add_argument("--temp", type=float, default=None, help="sampling temperature (default: llama.cpp's)")
    parser.add_argument("--seed", type=int, default=None)
    return parser.parse_args(argv)


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    if not args.gguf.is_file():
        sys.exit(f"no such model file: {args.gguf}")
    import xllamacpp

    alias = args.alias or args.gguf.stem
    params = xllamacpp.CommonParams()
    params.model.path = str(args.gguf)
    params.model_alias = {alias}
    params.n_ctx = args.ctx
    # One slot: on a CPU parallel slots share the cores (each gets slower) and split the context.
    params.n_parallel = 1
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.port = args.port
    params.use_jinja = True  # the model's own chat template
    if args.temp is not None:
        params.sampling.temp = args.temp
    if args.seed is not None:
        params.sampling.seed = args.seed
    stop = False

    def on_signal(_signum: int, _frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    server = xllamacpp.Server(params)  # loads the model, then serves on HOST:port until deleted
    print(
        f"Serving {args.gguf.name} at http://{HOST}:{args.port}/v1 (model name: {alias}; {args.threads} threads, "
        f"context {args.ctx}, OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}).\n"
        f"In Settings → Models: base URL http://{HOST}:{args.port}/v1, model {alias}, no API key, timeout 300 s, "
        "parallel requests 1; in the admin (/admin/ → API configs): tool call mode “Constrained output”, max "
        "output tokens 512. Ctrl-C stops it.",
        flush=True,
    )
    while not stop:
        time.sleep(0.2)
    del server


if __name__ == "__main__":
    main(sys.argv[1:])
