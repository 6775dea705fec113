"""The small hook registry lower layers announce through; higher layers connect in AppConfig.ready()."""

from __future__ import annotations

from django.dispatch import Signal

# Sent by `manage.py bootstrap` when the database holds no mail yet. Receivers load demo data.
# kwargs: user (the admin user), stdout (a writable stream for progress).
demo_data_requested = Signal()
