"""Review queue and history pages. Thin: parse, call, render."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode

from formats import memoryrail
from memoryadmin.listing import listing, wants_csv
from memoryadmin.permissions import Action, user_can
from memoryadmin.web import team_view
from reviews import selectors
from reviews.filters import DecisionFilterSet, QueueFilterSet
from reviews.forms import BatchForm
from reviews.models import Repository
from reviews.services.content import masked_title

PAGE_SIZE = 50


@team_view(Action.VIEW)
def review_queue(request: HttpRequest) -> HttpResponse:
    return queue_page(request)


def queue_page(
    request: HttpRequest,
    *,
    batch_form: BatchForm | None = None,
    selected: frozenset[int] = frozenset(),
    blocked: dict[int, str] | None = None,
    status: int = 200,
) -> HttpResponse:
    """The queue; after a refused batch, with its selection, comment and blocking rows kept."""
    team = request.team  # type: ignore[attr-defined]
    params = queue_params(request)
    filters = selectors.queue_filters(params)
    queue = selectors.review_queue(team, filters={}, user=request.user)
    result = listing(request, QueueFilterSet, queue, per_page=PAGE_SIZE, team=team, data=params)
    if wants_csv(request) and not result.invalid:
        return result.csv()
    page = result.page
    for memory in page:
        memory.title = masked_title(memory.title)
    repositories = list(
        Repository.objects.filter(team=team).only("id", "name", "last_sync_ok", "enabled")
    )
    context = {
        "page": page,
        "listing": result,
        "filters": filters,
        "repositories": repositories,
        "broken": [r for r in repositories if r.last_sync_ok is False and r.enabled],
        "types": list(memoryrail.TYPE_PREFIXES),
        "can_review": user_can(request.user, team, Action.REVIEW),
        "can_manage": user_can(request.user, team, Action.MANAGE),
        "two_approvals": selectors.requires_two_approvals(team),
        "two_approval_types": selectors.TWO_APPROVAL_TYPES,
        "batch_form": batch_form or BatchForm(),
        "selected": selected,
        "blocked": blocked or {},
        "others": sorted(selected - set(blocked or {})),
        "queue_query": urlencode({k: v for k, v in filters.items() if v}),
        # A refused batch renders this page at the batch URL: links and the filter bar go back
        # to the queue's own, and the batch form posts the query it was shown with.
        "list_url": reverse("review-queue", args=[team.slug]),
        "list_query": params.urlencode(),
    }
    return render(
        request, "reviews/queue.html", context, status=status if status != 200 else result.status
    )


def queue_params(request: HttpRequest) -> QueryDict:
    """The queue's query: the page's own; a batch posts it in its action URL (page, sort,
    search and filters), and a form posted without one keeps its hidden filter fields."""
    params = request.GET.copy()
    if request.method == "POST":
        params.pop("export", None)
        for key in selectors.QUEUE_FILTERS:
            if key not in params and request.POST.get(key):
                params[key] = request.POST[key]
    return params


@team_view(Action.VIEW)
def review_history(request: HttpRequest) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    result = listing(
        request, DecisionFilterSet, selectors.decision_history(team), per_page=PAGE_SIZE, team=team
    )
    if wants_csv(request) and not result.invalid:
        return result.csv()
    page = result.page
    for decision in page:
        for item in decision.items.all():  # the prefetched rows the template shows
            item.title = masked_title(item.title)
    polling = any(d.state == "pending" for d in page)
    template = "reviews/_history_rows.html" if request.htmx else "reviews/history.html"  # type: ignore[attr-defined]
    can_review = user_can(request.user, team, Action.REVIEW)
    context = {"page": page, "listing": result, "polling": polling, "can_review": can_review}
    return render(request, template, context, status=result.status)
