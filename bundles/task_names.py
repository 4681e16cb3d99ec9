"""The registered names of the brain's queued tasks (services queue by name: memoryadmin.queue)."""

IMPORT_JOB_RUN = "bundles.tasks.import_job_run"
IMPORT_PROPOSAL_PUSH = "bundles.tasks.import_proposal_push"
BRAIN_EMBED = "bundles.tasks.brain_embed"
