"""The FilterSets of the review pages and their API lists: the queue and decision history."""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import Exists, OuterRef, Q, QuerySet

from formats import memoryrail
from memoryadmin.listing import Column, ListFilterSet, column, date_range, sort_by
from memoryadmin.models import ApiToken
from reviews.models import Decision, DecisionItem, DecisionKind, Memory, PushState, Repository

FLAGS = (("secret", "Secret finding"), ("stale", "Stale links"), ("clean", "No flags"))


class _TeamRepositoryMixin:
    """The repository filter offers (and accepts) the request's team's repositories only."""

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        team = self.team  # type: ignore[attr-defined]
        self.filters["repository"].queryset = (  # type: ignore[attr-defined]
            Repository.objects.filter(team=team).order_by("name")
            if team is not None
            else Repository.objects.none()
        )


class QueueFilterSet(_TeamRepositoryMixin, ListFilterSet):
    """The review queue's filters: the queue page and `GET /api/reviews/proposals/` take them
    strictly (a bad value is a 400), the proposal pages' previous/next forgivingly
    (`forgiving`, through `selectors.review_queue`)."""

    search_fields = ("title", "ref", "memory_id", "author_name", "path")
    repository = django_filters.ModelChoiceFilter(
        queryset=Repository.objects.none(), label="Repository", empty_label="All"
    )
    type = django_filters.ChoiceFilter(
        choices=[(t, t) for t in memoryrail.TYPE_PREFIXES], label="Type", empty_label="All"
    )
    flag = django_filters.ChoiceFilter(
        choices=FLAGS, method="filter_flag", label="Flags", empty_label="Any"
    )
    assigned = django_filters.ChoiceFilter(
        choices=(("me", "Assigned to me"),),
        method="filter_assigned",
        label="Assigned",
        empty_label="Anyone",
    )
    after, before = date_range("added_at")
    sort = sort_by(("added_at", "added"), ("title", "title"), ("type", "type"))
    csv_name = "review-queue"
    # Titles as the page shows them: masked where a secret rule matched (reviews.services.content).
    csv_columns = (
        column("ref", "ref"),
        column("id", "memory_id"),
        column("type", "type"),
        Column("title", lambda m: _masked(m.title)),
        column("repository", "repository.name"),
        column("author", "author_name"),
        column("added", "added_at"),
        column("secret_finding", "has_secret"),
        column("stale", "is_stale"),
    )

    class Meta:
        model = Memory
        fields: list[str] = []

    def __init__(self, *args: Any, user: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # assigned=me: the user given, else the request's (a token acts for its maker)
        self.user = user if user is not None else _acting_user(self.request)

    def forgiving(self) -> QuerySet:
        """The queue as the proposal pages read their filters: a value the form refuses is
        left out (a bad date, type or flag narrows nothing), except a repository that is not
        the team's, which names none of this queue's rows and so leaves none."""
        queryset = self.qs  # validates, then filters by the values that cleaned only
        return queryset.none() if "repository" in self.errors else queryset

    def filter_flag(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        if value == "secret":
            return queryset.filter(has_secret=True)
        if value == "stale":
            return queryset.filter(is_stale=True)
        return queryset.filter(has_secret=False, is_stale=False)

    def filter_assigned(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        user = self.user
        if user is None or not getattr(user, "is_authenticated", False):
            return queryset.none()
        return queryset.filter(assigned_reviewers=user)

    def csv_queryset(self, queryset: QuerySet) -> QuerySet:
        return queryset.prefetch_related(None)  # the assignees are not exported


# The queue's own filters, in the order the pages carry them from the queue to a proposal.
QUEUE_FILTERS = tuple(name for name in QueueFilterSet.base_filters if name not in ("q", "sort"))


def _acting_user(request: Any) -> Any:
    """A token acts for the person who made it; a team token is no one's, so nothing is theirs."""
    auth = getattr(request, "auth", None)
    if isinstance(auth, ApiToken):
        return auth.created_by
    return getattr(request, "user", None)


def _masked(title: str) -> str:
    from reviews.services.content import masked_title

    return masked_title(title)


class DecisionFilterSet(_TeamRepositoryMixin, ListFilterSet):
    search_fields = ("comment", "actor_label", "commit_sha", "state_detail")
    repository = django_filters.ModelChoiceFilter(
        queryset=Repository.objects.none(), label="Repository", empty_label="All"
    )
    kind = django_filters.ChoiceFilter(choices=DecisionKind.choices, label="Decision")
    state = django_filters.ChoiceFilter(choices=PushState.choices, label="Push state")
    reviewer = django_filters.CharFilter(
        field_name="actor_label", lookup_expr="icontains", label="Reviewer", max_length=200
    )
    after, before = date_range("created_at")
    sort = sort_by(("created_at", "when"), ("state", "state"), ("kind", "kind"))
    csv_name = "decisions"
    csv_columns = (
        column("id", "id"),
        column("when", "created_at"),
        column("decision", "kind"),
        column("reviewer", "actor_label"),
        column("repository", "repository.name"),
        Column("proposals", lambda d: " ".join(i.ref for i in d.items.all())),
        Column("titles", lambda d: " | ".join(_masked(i.title) for i in d.items.all())),
        column("comment", "comment"),
        column("state", "state"),
        column("commit", "commit_sha"),
    )

    class Meta:
        model = Decision
        fields: list[str] = []

    def filter_search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        # A decision is also found by the refs and titles of the proposals it decided.
        for word in value.split()[:8]:
            items = DecisionItem.objects.filter(
                Q(title__icontains=word) | Q(ref__iexact=word), decision=OuterRef("pk")
            )
            own = Q()
            for field in self.search_fields:
                own |= Q(**{f"{field}__icontains": word})
            queryset = queryset.filter(own | Q(Exists(items)))
        return queryset
