from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from memoryadmin.audit import Actor
from memoryadmin.services import team_create


class Command(BaseCommand):
    help = "Create a team."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("slug")
        parser.add_argument("--name", default="")

    def handle(self, *args, slug: str, name: str, **options):  # type: ignore[no-untyped-def]
        try:
            team = team_create(actor=Actor.system(), slug=slug, name=name)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(team.slug)
