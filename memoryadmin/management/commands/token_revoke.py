from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from memoryadmin.audit import Actor
from memoryadmin.models import ApiToken
from memoryadmin.tokens import token_revoke


class Command(BaseCommand):
    help = "Revoke an API token, named by its prefix (the 8 characters after 'ma_') or team + name."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("prefix_or_team", help="token prefix, or a team slug with --name")
        parser.add_argument("--name", default=None)

    def handle(self, *args, prefix_or_team: str, name: str | None, **options):  # type: ignore[no-untyped-def]
        if name is not None:
            tokens = ApiToken.objects.filter(team__slug=prefix_or_team, name=name, revoked_at=None)
        else:
            prefix = prefix_or_team.removeprefix("ma_").split("_")[0]
            tokens = ApiToken.objects.filter(prefix=prefix)
        found = list(tokens[:2])
        if not found:
            raise CommandError("No such token.")
        if len(found) > 1:
            raise CommandError("More than one token matches; revoke by prefix.")
        token = token_revoke(actor=Actor.system(), token=found[0])
        self.stdout.write(f"revoked {token.name} (ma_{token.prefix}…)")
