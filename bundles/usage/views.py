"""The team's Usage page (/t/<team>/usage/): most served, not served lately, activity per token."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from bundles.usage.selectors import DEFAULT_DAYS, clean_days, usage_summary
from memoryadmin.permissions import Action
from memoryadmin.web import team_view

DAY_CHOICES = (7, 30, 90)


@require_GET
@team_view(Action.VIEW)
def usage_page(request: HttpRequest) -> HttpResponse:
    days = clean_days(request.GET.get("days"))
    status = 200
    if days is None:
        days, status = DEFAULT_DAYS, 400
    context = {**usage_summary(request.team, days=days), "day_choices": DAY_CHOICES}  # type: ignore[attr-defined]
    context["bad_days"] = status == 400
    return render(request, "bundles/usage.html", context, status=status)
