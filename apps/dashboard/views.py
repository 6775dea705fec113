from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from apps.dashboard.selectors import dashboard_for_user


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/pages/home.html", {"dashboard": dashboard_for_user(user=request.user)})
