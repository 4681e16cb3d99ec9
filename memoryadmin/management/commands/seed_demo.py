from __future__ import annotations

import importlib
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from memoryadmin.audit import Actor
from memoryadmin.env import env_str
from memoryadmin.models import Role, Team
from memoryadmin.services import membership_set, team_create

DEMO_APPS = ("sources", "reviews", "bundles")


class Command(BaseCommand):
    help = "Create the demo team, an admin user and each app's sample data (idempotent)."

    def handle(self, *args, **options):  # type: ignore[no-untyped-def]
        actor = Actor.system()
        User = get_user_model()
        with transaction.atomic():
            team = Team.objects.filter(slug="demo").first() or team_create(
                actor=actor, slug="demo", name="Demo team"
            )
            admin = User.objects.filter(username="admin").first()
            if admin is None:
                given = env_str("MEMORYADMIN_ADMIN_PASSWORD")
                password = given or secrets.token_urlsafe(12)
                admin = User.objects.create_superuser("admin", "admin@example.org", password)
                admin.first_name, admin.last_name = "Ada", "Admin"
                admin.save(update_fields=["first_name", "last_name"])
                shown = "(from MEMORYADMIN_ADMIN_PASSWORD)" if given else password
                self.stdout.write(
                    self.style.SUCCESS(
                        f"Created user 'admin' with password: {shown}  (shown once; keep it)"
                    )
                )
            membership_set(actor=actor, team=team, user=admin, role=Role.ADMIN)
        for app in DEMO_APPS:
            try:
                module = importlib.import_module(f"{app}.demo")
            except ModuleNotFoundError:
                continue
            message = module.seed(team=team, user=admin)
            if message:
                self.stdout.write(message)
        self.stdout.write(
            "Demo ready: team 'demo', user 'admin'. Forgot the password? "
            "python manage.py changepassword admin"
        )
