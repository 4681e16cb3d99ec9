"""Core pages: home, team dashboard, API tokens, health."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from memoryadmin import services
from memoryadmin import tokens as token_services
from memoryadmin.audit import Actor
from memoryadmin.authentication import address_failures, address_key, failure_count
from memoryadmin.filters import AuditFilterSet, TokenFilterSet
from memoryadmin.forms import TeamCreateForm, TokenCreateForm
from memoryadmin.health import health, readiness
from memoryadmin.listing import listing, wants_csv
from memoryadmin.models import ApiToken, AuditEvent, Role, Scope, Team
from memoryadmin.permissions import Action, teams_for
from memoryadmin.snippets import client_snippets
from memoryadmin.web import form_add_errors, team_view

LOGIN_GROUP = "memoryadmin.login"


class RateLimitedLoginView(auth_views.LoginView):
    """Django's login with failed sign-ins counted per address, per username and per both.

    Only failures count, and the password is checked before an address's counter can refuse:
    - a username with more than MEMORYADMIN_LOGIN_USER_RATE failures (from anywhere) is locked
      for the window: every attempt is 429 unchecked, the right password too (distributed
      guessing of one account stops there);
    - an address with more than MEMORYADMIN_LOGIN_RATE failures (any usernames) gets one check
      per username it has not failed yet: a colleague behind the same proxy or NAT still signs
      in with the right password; a username this address already failed is 429 unchecked
      until the window passes (so one address can not go on guessing one account).
    """

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:  # type: ignore[no-untyped-def]
        self._login_name = _login_name(request)
        if self._login_counts(increment=False, locked_only=True):
            return self._too_many(status=429)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):  # type: ignore[no-untyped-def]
        if self._login_counts(increment=True, locked_only=False):
            return self._too_many(status=429)
        return super().form_invalid(form)

    def _login_counts(self, *, increment: bool, locked_only: bool) -> bool:
        request, name = self.request, self._login_name
        address, address_limit = address_failures(
            request, group=LOGIN_GROUP, rate=settings.MEMORYADMIN_LOGIN_RATE, increment=increment
        )
        user, user_limit = failure_count(
            request,
            group=f"{LOGIN_GROUP}.user",
            rate=settings.MEMORYADMIN_LOGIN_USER_RATE,
            value=name,
            increment=increment,
        )
        pair, _ = failure_count(
            request,
            group=f"{LOGIN_GROUP}.pair",
            rate=settings.MEMORYADMIN_LOGIN_RATE,
            value=f"{address_key(request)} {name}",
            increment=increment,
        )
        if user > user_limit:
            return True
        if locked_only:
            return address > address_limit and pair > 0
        return address > address_limit

    def _too_many(self, *, status: int) -> HttpResponse:
        # An unbound form (a bound one would check the password when its errors are read),
        # keeping the username typed.
        field = get_user_model().USERNAME_FIELD
        form = self.get_form_class()(
            self.request, initial={field: str(self.request.POST.get(field, ""))[:200]}
        )
        form.full_clean()  # unbound: only starts an empty error list
        form.cleaned_data = {}
        form.add_error(None, "Too many failed sign-ins. Wait a minute and try again.")
        return self.render_to_response(self.get_context_data(form=form), status=status)


def _login_name(request: HttpRequest) -> str:
    """The username a login post names, as its counters know it (case-folded, bounded)."""
    field = get_user_model().USERNAME_FIELD
    return str(request.POST.get(field, "")).strip().casefold()[:200]


@login_required
def home(request: HttpRequest) -> HttpResponse:
    teams = list(teams_for(request.user))
    chosen = request.GET.get("team")
    if chosen:  # the header's team switch, sent as a plain form when JavaScript is off
        team = next((t for t in teams if t.slug == chosen), None)
        if team is not None:
            return redirect("team-home", team_slug=team.slug)
        messages.error(request, "You are not a member of that team.")
    form = TeamCreateForm(request.POST or None) if request.user.is_superuser else None
    if request.method == "POST":
        if form is None:
            raise PermissionDenied("Only superusers create teams.")
        if form.is_valid():
            try:
                team = _team_create_with_admin(request, form.cleaned_data)
            except ValidationError as exc:
                form_add_errors(form, exc)
            else:
                messages.success(request, f"Team “{team.name}” created; you are its admin.")
                return redirect("team-home", team_slug=team.slug)
    elif len(teams) == 1 and not request.user.is_superuser:
        return redirect("team-home", team_slug=teams[0].slug)
    return render(request, "memoryadmin/home.html", {"teams": teams, "form": form})


@transaction.atomic
def _team_create_with_admin(request: HttpRequest, data: dict) -> Team:
    actor = Actor.from_request(request)
    team = services.team_create(actor=actor, slug=data["slug"], name=data["name"])
    services.membership_set(actor=actor, team=team, user=request.user, role=Role.ADMIN)
    return team


@team_view(Action.VIEW)
def team_home(request: HttpRequest) -> HttpResponse:
    from memoryadmin.dashboard import team_dashboard
    from reviews.models import Repository

    context = team_dashboard(request.team)
    # A new team's card says what fills it: no repository yet is not "0 proposals waiting".
    # Asked only when the queue is empty and nothing was decided lately (a busy team has one).
    reviews = context.get("reviews")
    if reviews and not reviews["queue_size"] and not any(w["total"] for w in reviews["weeks"]):
        context["has_repositories"] = Repository.objects.filter(team=request.team).exists()
    return render(request, "memoryadmin/team_home.html", context)


# The "Agent token" preset of the Tokens page: what an agent needs to read and to propose.
AGENT_PRESET = {"name": "agent", "scopes": [Scope.CONTEXT_READ, Scope.REVIEWS_PROPOSE]}


@team_view(Action.MANAGE)
def token_list(request: HttpRequest) -> HttpResponse:
    initial = AGENT_PRESET if request.GET.get("preset") == "agent" else None
    form = TokenCreateForm(request.POST or None, initial=initial)
    new_secret, snippets = None, []
    if request.method == "POST" and form.is_valid():
        try:
            token, new_secret = token_services.token_create(
                actor=Actor.from_request(request),
                team=request.team,
                name=form.cleaned_data["name"],
                scopes=form.cleaned_data["scopes"],
                expires_days=form.cleaned_data["expires_days"],
            )
        except ValidationError as exc:
            form_add_errors(form, exc)
        else:
            messages.success(
                request, f"Token “{token.name}” created. Copy it now: it is shown once."
            )
            form = TokenCreateForm()
            snippets = client_snippets(request.build_absolute_uri(reverse("mcp")), new_secret)
    tokens = ApiToken.objects.filter(team=request.team).select_related("created_by", "revoked_by")
    result = listing(request, TokenFilterSet, tokens, team=request.team)
    if wants_csv(request) and not result.invalid:
        return result.csv()
    response = render(
        request,
        "memoryadmin/tokens.html",
        {
            "form": form,
            "listing": result,
            "tokens": result.page,
            "new_secret": new_secret,
            "snippets": snippets,
        },
        status=result.status,
    )
    response["Cache-Control"] = "no-store"  # the page may carry a secret
    return response


@require_http_methods(["GET", "POST"])
@team_view(Action.MANAGE)
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    """GET: what revoking does, and a button; POST: revoke."""
    token = get_object_or_404(ApiToken, pk=token_id, team=request.team)
    if request.method != "POST":
        return render(request, "memoryadmin/token_revoke.html", {"token": token})
    token_services.token_revoke(actor=Actor.from_request(request), token=token)
    messages.success(request, f"Token “{token.name}” revoked: it now gets 401 everywhere.")
    return redirect("token-list", team_slug=request.team.slug)


@team_view(Action.MANAGE)
def audit_list(request: HttpRequest) -> HttpResponse:
    events = AuditEvent.objects.filter(team=request.team).only(
        "created_at", "actor_label", "action", "target_type", "target_id", "summary", "request_id"
    )
    result = listing(request, AuditFilterSet, events, team=request.team)
    if wants_csv(request) and not result.invalid:
        return result.csv()
    return render(
        request,
        "memoryadmin/audit.html",
        {"listing": result, "page": result.page},
        status=result.status,
    )


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    ok, body = health()
    return JsonResponse(body, status=200 if ok else 503)


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    ok, body = readiness()
    return JsonResponse(body, status=200 if ok else 503)
