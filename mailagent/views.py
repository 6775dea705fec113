from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from mailagent.diagnostics import runtime_diagnostics


@staff_member_required
def diagnostics(request: HttpRequest) -> HttpResponse:
    return render(request, "mailagent/pages/diagnostics.html", {"diag": runtime_diagnostics()})
