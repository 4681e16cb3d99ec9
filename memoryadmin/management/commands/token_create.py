from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from memoryadmin.audit import Actor
from memoryadmin.models import Team
from memoryadmin.tokens import token_create


class Command(BaseCommand):
    help = "Create an API token for a team and print only its secret on stdout."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("slug")
        parser.add_argument("--name", required=True)
        parser.add_argument(
            "--scopes", required=True, help="comma-separated, e.g. bundles:export,context:read"
        )
        parser.add_argument("--expires-days", type=int, default=None)

    def handle(self, *args, slug: str, name: str, scopes: str, expires_days: int | None, **options):  # type: ignore[no-untyped-def]
        team = Team.objects.filter(slug=slug).first()
        if team is None:
            raise CommandError(f"No team '{slug}'.")
        scope_list = [s.strip() for s in scopes.split(",") if s.strip()]
        try:
            token, secret = token_create(
                actor=Actor.system(),
                team=team,
                name=name,
                scopes=scope_list,
                expires_days=expires_days,
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stderr.write(f"created token {token.name} (ma_{token.prefix}…) for {slug}")
        self.stdout.write(secret)
