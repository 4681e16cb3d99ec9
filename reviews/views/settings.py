"""The team's review settings page. Thin: parse, call, render."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from memoryadmin.audit import Actor
from memoryadmin.permissions import Action
from memoryadmin.web import team_view
from reviews.forms import ReviewSettingsForm
from reviews.services.routing import review_settings, review_settings_update


@team_view(Action.MANAGE)
def review_settings_edit(request: HttpRequest) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    current = review_settings(team)
    form = ReviewSettingsForm(
        request.POST if request.method == "POST" else None,  # an unchecked box posts nothing
        initial={"require_two_approvals": current.require_two_approvals},
    )
    if request.method == "POST" and form.is_valid():
        review_settings_update(
            actor=Actor.from_request(request),
            team=team,
            require_two_approvals=form.cleaned_data["require_two_approvals"],
        )
        messages.success(request, "Review settings saved.")
        return redirect("review-settings", team_slug=team.slug)
    return render(request, "reviews/settings.html", {"form": form, "settings": current})
