"""Reviewer routing rules and the team's review settings (writes), and the stored assignments."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from formats.memoryrail import reviewer_rules as routing
from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import Membership, Role, Team
from memoryadmin.permissions import Action, actor_require
from memoryadmin.templatetags.memoryadmin_format import counted
from reviews.models import Memory, MemoryStatus, Repository, ReviewSettings

REVIEWING_ROLES = (Role.ADMIN, Role.REVIEWER)


def team_reviewers(team: Team) -> dict[str, int]:
    """User name -> user id of the team's members who may review (admins and reviewers)."""
    rows = Membership.objects.filter(team=team, role__in=REVIEWING_ROLES).values_list(
        "user__username", "user_id"
    )
    return dict(rows)


def validate_rules(team: Team, text: str) -> list[routing.Rule]:
    """Parse and check every rule; raise one ValidationError listing every problem by line."""
    rules, errors = routing.parse_rules(text)
    messages = [str(error) for error in errors]
    reviewers = team_reviewers(team)
    wanted = {name for rule in rules for name in rule.reviewers}
    existing = set(
        get_user_model()
        .objects.filter(username__in=wanted - set(reviewers))
        .values_list("username", flat=True)
    )
    for rule in rules:
        unknown = [n for n in rule.reviewers if n not in reviewers and n not in existing]
        if unknown:
            messages.append(f"Line {rule.line}: unknown user {', '.join(unknown)}.")
        cannot = [name for name in rule.reviewers if name in existing]
        if cannot:
            messages.append(
                f"Line {rule.line}: {', '.join(cannot)} cannot review for this team"
                " (needs the reviewer or admin role)."
            )
    if messages:
        raise ValidationError({"rules": messages})
    return rules


@transaction.atomic
def repository_routing_update(*, actor: Actor, repository: Repository, text: str) -> Repository:
    """Replace the repository's routing rules and reassign its open proposals."""
    actor_require(actor, repository.team, Action.MANAGE)
    rules = validate_rules(repository.team, text)
    repository = Repository.objects.select_for_update().get(pk=repository.pk)
    before = repository.routing_rules
    after = [rule.as_dict() for rule in rules]
    if before == after:
        return repository
    repository.routing_rules = after
    repository.save(update_fields=["routing_rules"])
    audit_record(
        actor=actor,
        action="repository.routing-update",
        team=repository.team,
        target=repository,
        summary=(
            f"Changed the reviewer routing of {repository.name} ({counted(len(after), 'rule')})"
        ),
        data={"before": before, "after": after},
    )
    assignments_refresh(repository=repository)
    return repository


@transaction.atomic
def assignments_refresh(*, repository: Repository) -> int:
    """Recompute who each proposal of the repository is assigned to; return the row count.

    Derived data (rules + index), so it is not audited; called at each sync and rule change.
    """
    through = Memory.assigned_reviewers.through
    through.objects.filter(memory__repository=repository).delete()
    rules = routing.rules_from_json(repository.routing_rules)
    if not rules:
        return 0
    reviewers = team_reviewers(repository.team)
    proposals = Memory.objects.filter(
        repository=repository, status=MemoryStatus.PROPOSED
    ).values_list("pk", "type", "path", "front_matter")
    rows = []
    for pk, memory_type, path, front_matter in proposals.iterator(chunk_size=500):
        names = routing.match_reviewers(
            rules, memory_type=memory_type, paths=routing.memory_paths(path, front_matter)
        )
        rows += [through(memory_id=pk, user_id=reviewers[n]) for n in names if n in reviewers]
    through.objects.bulk_create(rows, batch_size=500)
    return len(rows)


def review_settings(team: Team) -> ReviewSettings:
    """The team's settings, or unsaved defaults (reading never writes)."""
    found = ReviewSettings.objects.filter(team=team).first()
    return found or ReviewSettings(team=team)


@transaction.atomic
def review_settings_update(
    *, actor: Actor, team: Team, require_two_approvals: bool
) -> ReviewSettings:
    actor_require(actor, team, Action.MANAGE)
    current, _ = ReviewSettings.objects.select_for_update().get_or_create(team=team)
    if current.require_two_approvals == require_two_approvals:
        return current
    current.require_two_approvals = require_two_approvals
    current.updated_at = timezone.now()
    current.save(update_fields=["require_two_approvals", "updated_at"])
    audit_record(
        actor=actor,
        action="review.settings-update",
        team=team,
        target=current,
        summary=(
            "Constraint and decision proposals now need two approvals"
            if require_two_approvals
            else "Constraint and decision proposals need one approval again"
        ),
        data={"require_two_approvals": require_two_approvals},
    )
    return current
