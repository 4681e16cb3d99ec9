from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from memoryadmin.audit import Actor
from memoryadmin.models import Role, Team
from memoryadmin.services import membership_set


class Command(BaseCommand):
    help = "Give a user a role on a team (replaces any role they had there)."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("slug")
        parser.add_argument("username")
        parser.add_argument("role", choices=Role.values)

    def handle(self, *args, slug: str, username: str, role: str, **options):  # type: ignore[no-untyped-def]
        team = Team.objects.filter(slug=slug).first()
        if team is None:
            raise CommandError(f"No team '{slug}'.")
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user '{username}'.")
        try:
            membership_set(actor=Actor.system(), team=team, user=user, role=role)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(f"{username} is {role} of {slug}")
