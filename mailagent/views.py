from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.views.generic import RedirectView

# One page per concern: the runtime facts that lived here are a section of the Diagnostics page
# (/runs/diagnostics/, beside the run audit trail). Old links and bookmarks keep working, for staff users
# only, like the page itself: anyone else gets the staff login, as there.
diagnostics = staff_member_required(
    RedirectView.as_view(pattern_name="runs:diagnostics", permanent=True, query_string=True)
)
