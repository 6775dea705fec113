"""filesystem_* tools: strictly inside the configured virtual root. Paths are resolved (symlinks
followed) and must stay under the resolved root; `..`, absolute paths elsewhere and links out of the
root are refused. Reads are size-capped and return extracted text (PDF, DOCX, HTML, text)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from apps.orchestration.tools.context import Actor, RunContext
from apps.orchestration.tools.schemas import FilesystemRetrieveArgs, FilesystemSearchArgs
from mailagent.llm import ToolFailure
from mailagent.textextract import extract_text, looks_binary

SEARCH_FILE_LIMIT = 20_000  # files looked at per search
CONTENT_SCAN_BYTES = 256 * 1024


def virtual_root(ctx: RunContext) -> Path:
    configured = (ctx.virtual_root or "").strip()
    if not configured:
        raise ToolFailure("no virtual root is configured: filesystem tools are off")
    root = Path(configured).expanduser()
    if not root.is_absolute() or not root.is_dir():
        raise ToolFailure("the configured virtual root is not an existing absolute directory")
    return root.resolve()


def resolve_inside(root: Path, relative: str) -> Path:
    """The real path of `relative` under `root`, or ToolFailure: never a path outside the root."""
    cleaned = relative.replace("\\", "/").strip()
    if "\x00" in cleaned:
        raise ToolFailure("access denied: invalid path")
    candidate = Path(cleaned)
    if candidate.is_absolute():
        raise ToolFailure("access denied: paths are relative to the virtual root")
    if any(part == ".." for part in candidate.parts):
        raise ToolFailure("access denied: '..' is not allowed")
    resolved = (root / candidate).resolve()
    if not resolved.is_relative_to(root):
        raise ToolFailure("access denied: the path leads outside the virtual root")
    return resolved


def search(ctx: RunContext, actor: Actor, args: FilesystemSearchArgs) -> dict[str, Any]:
    root = virtual_root(ctx)
    needle = args.query.lower()
    by_name: list[dict[str, Any]] = []
    by_content: list[dict[str, Any]] = []
    looked = 0
    for directory, subdirs, files in os.walk(root, followlinks=False):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        for filename in sorted(files):
            looked += 1
            if looked > SEARCH_FILE_LIMIT:
                break
            path = Path(directory) / filename
            try:
                real = path.resolve()
                if not real.is_relative_to(root) or not real.is_file():
                    continue  # a link out of the root is invisible
                size = real.stat().st_size
            except OSError:
                continue
            entry = {"filePath": path.relative_to(root).as_posix(), "size": size}
            if needle in filename.lower():
                by_name.append(entry)
            elif len(by_content) < args.limit and size <= CONTENT_SCAN_BYTES:
                try:
                    head = real.read_bytes()
                except OSError:
                    continue
                if not looks_binary(head) and needle in head.decode("utf-8", errors="ignore").lower():
                    by_content.append({**entry, "match": "content"})
            if len(by_name) >= args.limit:
                break
    results = (by_name + by_content)[: args.limit]
    return {"files": results, "total": len(results)}


def retrieve(ctx: RunContext, actor: Actor, args: FilesystemRetrieveArgs) -> dict[str, Any]:
    root = virtual_root(ctx)
    path = resolve_inside(root, args.filePath)
    if not path.is_file():
        raise ToolFailure(f"no file {args.filePath!r} under the virtual root")
    size = path.stat().st_size
    if size > ctx.settings.max_file_bytes:
        raise ToolFailure(f"the file is {size} bytes; the limit is {ctx.settings.max_file_bytes}")
    extracted = extract_text(path.read_bytes(), filename=path.name)
    if extracted.error and not extracted.text:
        raise ToolFailure(extracted.error)
    return {
        "filePath": path.relative_to(root).as_posix(),
        "size": size,
        "kind": extracted.kind,
        "truncated": extracted.truncated,
        "text": extracted.text,
    }
