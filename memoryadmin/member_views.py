"""Members and invitations pages: list, add, change role, remove (confirmed), invite, accept."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from memoryadmin import invitations, services
from memoryadmin.audit import Actor
from memoryadmin.filters import InvitationFilterSet, MemberFilterSet
from memoryadmin.forms import (
    InvitationAcceptForm,
    InvitationForm,
    MemberAddForm,
    MemberRoleForm,
)
from memoryadmin.listing import listing, wants_csv
from memoryadmin.models import ApiToken, Invitation, Membership, Role, TokenKind
from memoryadmin.permissions import Action
from memoryadmin.web import form_add_errors, team_view


def invite_link(request: HttpRequest):  # type: ignore[no-untyped-def]
    """The absolute accept URL of a secret, on the host the admin uses."""
    return lambda secret: request.build_absolute_uri(reverse("invitation-accept", args=[secret]))


@team_view(Action.MANAGE)
def member_list(request: HttpRequest) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    form = MemberAddForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = get_user_model().objects.filter(username=form.cleaned_data["username"]).first()
        if user is None:
            form.add_error("username", "No user with that name. Invite them by e-mail below.")
        else:
            try:
                services.membership_set(
                    actor=Actor.from_request(request),
                    team=team,
                    user=user,
                    role=form.cleaned_data["role"],
                )
            except ValidationError as exc:
                form_add_errors(form, exc)
            else:
                messages.success(
                    request, f"{user.get_username()} is now {form.cleaned_data['role']}."
                )
                return redirect("member-list", team_slug=team.slug)
    members = Membership.objects.filter(team=team).select_related("user")
    result = listing(request, MemberFilterSet, members, team=team)
    if wants_csv(request) and not result.invalid:
        return result.csv()
    pending = Invitation.objects.filter(Invitation.state_q("pending"), team=team).select_related(
        "invited_by"
    )
    return render(
        request,
        "memoryadmin/members.html",
        {
            "form": form,
            "listing": result,
            "members": result.page,
            "roles": Role.choices,
            "pending": pending,
        },
        status=400 if form.errors else result.status,
    )


@require_POST
@team_view(Action.MANAGE)
def member_change(request: HttpRequest, membership_id: int) -> HttpResponse:
    membership = get_object_or_404(Membership, pk=membership_id, team=request.team)
    if request.POST.get("remove"):  # removal says what happens first
        return redirect("member-remove", team_slug=request.team.slug, membership_id=membership.pk)
    form = MemberRoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a valid role.")
        return redirect("member-list", team_slug=request.team.slug)
    try:
        services.membership_set(
            actor=Actor.from_request(request),
            team=request.team,
            user=membership.user,
            role=form.cleaned_data["role"],
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(
            request, f"{membership.user.get_username()} is now {form.cleaned_data['role']}."
        )
    return redirect("member-list", team_slug=request.team.slug)


@team_view(Action.MANAGE)
def member_remove(request: HttpRequest, membership_id: int) -> HttpResponse:
    """GET: what removing this member does (their personal tokens go); POST: remove."""
    team = request.team  # type: ignore[attr-defined]
    membership = get_object_or_404(
        Membership.objects.select_related("user"), pk=membership_id, team=team
    )
    error = ""
    if request.method == "POST":
        username = membership.user.get_username()
        try:
            services.membership_remove(actor=Actor.from_request(request), membership=membership)
        except ValidationError as exc:
            error = " ".join(exc.messages)
        else:
            messages.success(request, f"Removed {username}; their tokens on this team are revoked.")
            return redirect("member-list", team_slug=team.slug)
    tokens = ApiToken.objects.filter(
        team=team, created_by=membership.user, kind=TokenKind.PERSONAL, revoked_at__isnull=True
    ).order_by("name")
    return render(
        request,
        "memoryadmin/member_remove.html",
        {"membership": membership, "tokens": tokens, "error": error},
        status=409 if error else 200,
    )


@team_view(Action.MANAGE)
def invitation_list(request: HttpRequest) -> HttpResponse:
    """POST invites (the link is shown once); GET lists the team's invitations."""
    team = request.team  # type: ignore[attr-defined]
    form = InvitationForm(request.POST or None)
    new_link = None
    if request.method == "POST" and form.is_valid():
        try:
            invitation, new_link = invitations.invitation_create(
                actor=Actor.from_request(request),
                team=team,
                email=form.cleaned_data["email"],
                role=form.cleaned_data["role"],
                link=invite_link(request),
            )
        except ValidationError as exc:
            form_add_errors(form, exc)
        else:
            messages.success(
                request,
                f"Invitation sent to {invitation.email}. Copy the link now: it is shown once.",
            )
            form = InvitationForm()
    rows = Invitation.objects.filter(team=team).select_related("invited_by", "accepted_by")
    result = listing(request, InvitationFilterSet, rows, team=team)
    if wants_csv(request) and not result.invalid:
        return result.csv()
    response = render(
        request,
        "memoryadmin/invitations.html",
        {
            "form": form,
            "listing": result,
            "invitations": result.page,
            "new_link": new_link,
            "invitation_days": settings.MEMORYADMIN_INVITATION_DAYS,
        },
        status=400 if form.errors else result.status,
    )
    response["Cache-Control"] = "no-store"  # the page may carry a link
    return response


@require_POST
@team_view(Action.MANAGE)
def invitation_revoke(request: HttpRequest, invitation_id: int) -> HttpResponse:
    invitation = get_object_or_404(Invitation, pk=invitation_id, team=request.team)
    try:
        invitations.invitation_revoke(actor=Actor.from_request(request), invitation=invitation)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Invitation of {invitation.email} revoked.")
    return redirect("invitation-list", team_slug=request.team.slug)


@never_cache
def invitation_accept(request: HttpRequest, secret: str) -> HttpResponse:
    """The link's page: signed out, choose a username and password; signed in, join as you."""
    try:
        invitation = invitations.invitation_open(secret)
    except ValidationError as exc:
        response = render(
            request, "memoryadmin/invitation_accept.html", {"closed": exc.messages[0]}, status=410
        )
        response["Referrer-Policy"] = "same-origin"
        return response
    signed_in = request.user.is_authenticated
    data = request.POST if request.method == "POST" else None
    form = InvitationAcceptForm(data) if not signed_in else None
    error = ""
    if request.method == "POST" and (signed_in or form.is_valid()):
        try:
            if signed_in:
                membership = invitations.invitation_accept(secret=secret, user=request.user)
            else:
                membership = invitations.invitation_accept(
                    secret=secret,
                    username=form.cleaned_data["username"],
                    password=form.cleaned_data["password"],
                )
        except ValidationError as exc:
            if form is not None:
                form_add_errors(form, exc)
            else:
                error = " ".join(exc.messages)
        else:
            if not signed_in:
                login(request, membership.user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, f"Welcome to {membership.team.name}.")
            return redirect("team-home", team_slug=membership.team.slug)
    response = render(
        request,
        "memoryadmin/invitation_accept.html",
        {"invitation": invitation, "form": form, "error": error},
        status=400 if (form is not None and form.errors) or error else 200,
    )
    # The path carries the secret: never sent to another site. Not "no-referrer": Chromium then
    # posts the form with "Origin: null", which CSRF protection refuses.
    response["Referrer-Policy"] = "same-origin"
    return response
