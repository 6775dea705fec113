"""The folder classifier's model file: the classifier pickled with joblib, written atomically, loaded only
when it is this FORMAT_VERSION."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Self

import joblib

FORMAT_VERSION = 6


class ModelFile:
    def save(self, path: Path) -> os.stat_result:
        """Write the model to `path` atomically: a temporary file of its own (a retrain and an upload may save
        the same library's model at once), then one rename over the old model. Returns the new file's stat."""
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as stream:
                joblib.dump(self, stream)
                stream.flush()
                written = os.fstat(stream.fileno())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return written

    @classmethod
    def load(cls, path: Path) -> Self | None:
        try:
            loaded = joblib.load(path)
        except (OSError, EOFError, ValueError, AttributeError, ModuleNotFoundError):
            return None
        if not isinstance(loaded, cls) or getattr(loaded, "version", 0) != FORMAT_VERSION:
            return None
        return loaded
