"""A decision's own page: what was decided, by whom, the commit, and the text at the time.

It outlives the proposal: a rejection deletes the file, the next sync drops the memory from
the index, and links sent by webhooks (`decision.made` carries this page's URL) still work.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from memoryadmin.permissions import Action, user_can
from memoryadmin.web import team_view
from reviews import selectors
from reviews.rendering import render_markdown
from reviews.services.content import masked_title


@require_GET
@team_view(Action.VIEW)
def decision_detail(request: HttpRequest, decision_pk: int) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    decision = get_object_or_404(selectors.decision_history(team), pk=decision_pk)
    items = list(decision.items.all())
    for item in items:
        item.title = masked_title(item.title)
        # Stored masked at decision time; rendered like every memory text (sanitised).
        item.body_html = mark_safe(render_markdown(item.body))  # noqa: S308 - sanitised by nh3
    context = {
        "decision": decision,
        "items": items,
        "can_review": user_can(request.user, team, Action.REVIEW),
    }
    return render(request, "reviews/decision.html", context)
