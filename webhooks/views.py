"""Team admins manage webhook endpoints and watch their deliveries."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from memoryadmin.audit import Actor
from memoryadmin.listing import listing, wants_csv
from memoryadmin.permissions import Action
from memoryadmin.web import form_add_errors, team_view
from webhooks import delivery as delivery_service
from webhooks import selectors
from webhooks.filters import DeliveryFilterSet
from webhooks.forms import EndpointForm
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import endpoints


def _no_store(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = "no-store"  # the page may carry a secret
    return response


def _endpoint(request: HttpRequest, endpoint_id: int) -> WebhookEndpoint:
    return get_object_or_404(
        WebhookEndpoint.objects.select_related("created_by"), pk=endpoint_id, team=request.team
    )


@team_view(Action.MANAGE)
def endpoint_list(request: HttpRequest) -> HttpResponse:
    form = EndpointForm(request.POST or None)
    created: WebhookEndpoint | None = None
    new_secret = None
    if request.method == "POST" and form.is_valid():
        try:
            created, new_secret = endpoints.endpoint_create(
                actor=Actor.from_request(request),
                team=request.team,
                url=form.cleaned_data["url"],
                events=form.cleaned_data["events"],
                description=form.cleaned_data["description"],
            )
        except ValidationError as exc:
            form_add_errors(form, exc)
        else:
            form = EndpointForm()
    context = {
        "form": form,
        "endpoints": selectors.endpoints_for(request.team),
        "created": created,
        "new_secret": new_secret,
    }
    return _no_store(render(request, "webhooks/endpoint_list.html", context))


def _detail(request: HttpRequest, endpoint: WebhookEndpoint, **extra: Any) -> HttpResponse:
    form = extra.pop("form", None) or EndpointForm(
        initial={
            "url": endpoint.url,
            "events": endpoint.events,
            "description": endpoint.description,
        }
    )
    result = listing(
        request,
        DeliveryFilterSet,
        selectors.deliveries_for(endpoint),
        per_page=25,
        team=request.team,
    )
    if wants_csv(request) and not result.invalid and request.method == "GET":
        return result.csv()
    page = result.page
    polling = any(not delivery.is_finished for delivery in page)  # live-update open attempts
    context = {
        "endpoint": endpoint,
        "form": form,
        "page": page,
        "listing": result,
        "polling": polling,
        "overlap": endpoints.overlap_active(endpoint),
        **extra,
    }
    status = 200 if request.method == "POST" else result.status
    return _no_store(render(request, "webhooks/endpoint_detail.html", context, status=status))


@team_view(Action.MANAGE)
def endpoint_detail(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    endpoint = _endpoint(request, endpoint_id)
    if request.method != "POST":
        return _detail(request, endpoint)
    form = EndpointForm(request.POST)
    if form.is_valid():
        try:
            endpoints.endpoint_update(
                actor=Actor.from_request(request),
                endpoint=endpoint,
                url=form.cleaned_data["url"],
                events=form.cleaned_data["events"],
                description=form.cleaned_data["description"],
            )
        except ValidationError as exc:
            form_add_errors(form, exc)
        else:
            messages.success(request, "Endpoint saved.")
            return redirect("webhook-detail", team_slug=request.team.slug, endpoint_id=endpoint.pk)
    return _detail(request, endpoint, form=form)


@require_POST
@team_view(Action.MANAGE)
def endpoint_active(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    endpoint = _endpoint(request, endpoint_id)
    active = request.POST.get("active") == "true"
    endpoints.endpoint_set_active(
        actor=Actor.from_request(request), endpoint=endpoint, active=active
    )
    messages.success(request, f"Endpoint {'enabled' if active else 'disabled'}.")
    return redirect("webhook-detail", team_slug=request.team.slug, endpoint_id=endpoint.pk)


@require_http_methods(["GET", "POST"])
@team_view(Action.MANAGE)
def endpoint_rotate(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    """GET: what rotating does (and how long the old secret keeps signing). POST: rotate and
    show the new secret once."""
    endpoint = _endpoint(request, endpoint_id)
    if request.method == "GET":
        context = {"endpoint": endpoint, "overlap_hours": settings.WEBHOOK_SECRET_OVERLAP_HOURS}
        return render(request, "webhooks/endpoint_rotate.html", context)
    endpoint, new_secret = endpoints.endpoint_rotate_secret(
        actor=Actor.from_request(request), endpoint=endpoint
    )
    return _detail(request, endpoint, new_secret=new_secret)


@require_http_methods(["GET", "POST"])
@team_view(Action.MANAGE)
def endpoint_delete(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    """GET: what deleting removes, with a confirm button. POST: delete."""
    endpoint = _endpoint(request, endpoint_id)
    if request.method == "GET":
        context = {"endpoint": endpoint, "deliveries": endpoint.deliveries.count()}
        return render(request, "webhooks/endpoint_delete.html", context)
    endpoints.endpoint_delete(actor=Actor.from_request(request), endpoint=endpoint)
    messages.success(request, f"Endpoint {endpoint.url} deleted.")
    return redirect("webhook-list", team_slug=request.team.slug)


@require_POST
@team_view(Action.MANAGE)
def endpoint_ping(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    """Send a signed test event now and say what the receiver answered."""
    endpoint = _endpoint(request, endpoint_id)

    def send() -> tuple[int, str]:
        sent = endpoints.endpoint_test(actor=Actor.from_request(request), endpoint=endpoint)
        if sent.succeeded:
            return messages.SUCCESS, f"Test event sent. {sent.message}"
        return messages.ERROR, f"Test event failed. {sent.message}"

    return _back_to_endpoint(request, endpoint, send)


def _back_to_endpoint(
    request: HttpRequest, endpoint: WebhookEndpoint, act: Callable[[], tuple[int, str]]
) -> HttpResponse:
    """Make one service call, then show its message (or its refusal's) on the endpoint's page."""
    try:
        level, text = act()
    except ValidationError as exc:
        level, text = messages.ERROR, " ".join(exc.messages)
    messages.add_message(request, level, text)
    return redirect("webhook-detail", team_slug=request.team.slug, endpoint_id=endpoint.pk)


@require_http_methods(["GET", "POST"])
@team_view(Action.MANAGE)
def endpoint_end_overlap(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    """GET: what ending the overlap does. POST: drop the previous secret now."""
    endpoint = _endpoint(request, endpoint_id)
    if request.method == "GET":
        if not endpoints.overlap_active(endpoint):
            messages.info(request, "No previous secret is signing: there is no overlap to end.")
            return redirect("webhook-detail", team_slug=request.team.slug, endpoint_id=endpoint.pk)
        return render(request, "webhooks/endpoint_end_overlap.html", {"endpoint": endpoint})

    def end() -> tuple[int, str]:
        endpoints.endpoint_end_overlap(actor=Actor.from_request(request), endpoint=endpoint)
        return messages.SUCCESS, "Overlap ended: only the current secret signs deliveries."

    return _back_to_endpoint(request, endpoint, end)


@require_POST
@team_view(Action.MANAGE)
def delivery_redeliver(request: HttpRequest, endpoint_id: int, delivery_id: int) -> HttpResponse:
    endpoint = _endpoint(request, endpoint_id)
    delivery = get_object_or_404(
        WebhookDelivery.objects.select_related("endpoint"), pk=delivery_id, endpoint=endpoint
    )

    def redeliver() -> tuple[int, str]:
        delivery_service.delivery_redeliver(actor=Actor.from_request(request), delivery=delivery)
        return messages.SUCCESS, "Redelivery queued."

    return _back_to_endpoint(request, endpoint, redeliver)
