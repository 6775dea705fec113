"""Static files with DEBUG off: hashed and compressed once collected, and working before that.

Production uses WhiteNoise's manifest storage (content-hashed names, served with far-future caching).
Its stock form answers every page with a 500 until `collectstatic` has run ("Missing staticfiles manifest
entry"). Here a file the manifest does not know keeps its plain name, and WhiteNoise also serves files from
the source directories (WHITENOISE_USE_FINDERS), so a fresh checkout works at once; `manage.py serve`
runs collectstatic itself when the manifest is missing, so the usual start gets the hashed copies.
"""

from __future__ import annotations

from typing import Any

from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticFilesStorage(CompressedManifestStaticFilesStorage):
    manifest_strict = False

    def hashed_name(self, name: str, content: Any = None, filename: str | None = None) -> str:
        try:
            return str(super().hashed_name(name, content, filename))
        except ValueError:
            # Not collected yet: the plain name, which WhiteNoise serves from the finders.
            return name

    def manifest_exists(self) -> bool:
        return bool(self.manifest_storage.exists(self.manifest_name))
