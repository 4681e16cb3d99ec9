"""Turn on pgvector after the extension was installed late (docs/brain.md, "Backends")."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from bundles.embeddings.lifecycle import pgvector_enable
from memoryadmin.audit import Actor


class Command(BaseCommand):
    help = (
        "Create the pgvector extension if the database allows it, add the embedding_vector "
        "column and its HNSW index, and copy the stored vectors into it. Safe to run again."
    )

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument(
            "--batch-size", type=int, default=2000, help="vectors copied per transaction"
        )

    def handle(self, *args, batch_size: int, **options):  # type: ignore[no-untyped-def]
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1.")
        result = pgvector_enable(actor=Actor.system(), batch_size=batch_size)
        if not result.enabled:
            raise CommandError(result.message + " Search keeps the exact scan.")
        self.stdout.write(result.message)
