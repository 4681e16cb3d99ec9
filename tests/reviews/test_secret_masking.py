"""Text the secret scanner flags never leaves memoryadmin: not on the page, in the API, the
audit log, a commit message or a webhook payload. Rule and line stay; a reviewer who says why
may see the value once (audited).

Every test runs on a real bare remote over file:// with a proposal whose title, body and front
matter hold credential-looking values; decisions go through the real push path.
"""

from __future__ import annotations

import json
import shutil

import pytest
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from formats import memoryrail
from formats.memoryrail.secrets import secrets_mask, secrets_mask_front_matter
from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent, Role
from reviews.models import Decision, Memory, PushState, Repository, ReviewSettings
from reviews.services.decisions import proposal_approve
from reviews.services.repositories import repository_create, repository_sync
from tests.conftest import wait_for
from tests.reviews.conftest import M, Remote, git, memory_text
from tests.webhooks.conftest import loopback_http, make_endpoint, receiver  # noqa: F401
from webhooks.models import WebhookDelivery

GITHUB = "ghp_" + "Zq9Xw8Vu7T" * 3 + "s6Rq5P"
AWS = "AKIAQ7RT3XW2ZP5LMN4K"
PEM_BODY = "MIIEowIBAAKCAQEAs3cr3tK3yM4t3r14lb0dy"
PASSWORD = "hunter2Hunter2x"
API_TOKEN = "Xy7Wq2Lp9Kd3"
DB_PASSWORD = "Pg5ecretPass"
VALUES = (GITHUB, AWS, PEM_BODY, PASSWORD, API_TOKEN, DB_PASSWORD)

LEAKY = "20260301-deploy-secrets"
POSTGRES = "20260101-use-postgres"
# (rule, line) in the proposal's file: title on line 4, notes 9, api_token 10, body from 12
FINDINGS = [
    ("github-token", 4),
    ("credential-assignment", 9),
    ("credential-assignment", 10),
    ("aws-access-key-id", 13),
    ("private-key", 14),
]


def leaky_files() -> dict[str, str | None]:
    return {
        f"{M}/{LEAKY}.md": memory_text(
            LEAKY,
            title=f"Deploy with {GITHUB}",
            status="proposed",
            supersedes=POSTGRES,
            notes=f"db password={PASSWORD}",
            api_token=API_TOKEN,
            body=(
                "Deploys read the key from the vault.\n"
                f"export AWS_ACCESS_KEY_ID={AWS}\n"
                "-----BEGIN RSA PRIVATE KEY-----\n"
                f"{PEM_BODY}\n"
                "-----END RSA PRIVATE KEY-----\n"
                "Rotate it after use.\n"
            ),
        ),
        # the active memory the proposal replaces, shown beside it
        f"{M}/{POSTGRES}.md": memory_text(
            POSTGRES,
            title="Use PostgreSQL",
            body=f"Connect to postgres://app:{DB_PASSWORD}@db/app\n",
        ),
    }


def assert_masked(text: str) -> None:
    leaked = [value for value in VALUES if value in text]
    assert not leaked, f"secret values leaked: {leaked}"


def assert_rules_and_lines(page: str) -> None:
    for rule, line in FINDINGS:
        assert f"rule <code>{rule}</code>, line {line}" in page


@pytest.fixture
def leaky(repository: Repository, remote: Remote) -> Memory:
    """The secret-bearing proposal, committed by an agent after the repository was added."""
    remote.commit(leaky_files(), "Agent proposes a deploy note")
    repository_sync(repository_id=repository.pk)
    memory = Memory.objects.get(repository=repository, memory_id=LEAKY)
    assert memory.has_secret
    assert [(f["rule"], f["line"]) for f in memory.secret_findings] == FINDINGS
    return memory


def audit_text() -> str:
    rows = AuditEvent.objects.order_by("id").values_list("action", "summary", "data")
    return "\n".join(f"{action} {summary} {json.dumps(data)}" for action, summary, data in rows)


# --- the format library ----------------------------------------------------------------------


def test_it_masks_each_matched_span_and_reports_what_scan_text_reports():
    text = leaky_files()[f"{M}/{LEAKY}.md"]
    assert text is not None
    masked, findings = secrets_mask(text, path="m.md")
    assert findings == memoryrail.scan_text(text, path="m.md")
    assert [(f.rule, f.line) for f in findings] == FINDINGS
    assert_masked(masked)
    assert masked.count("\n") == text.count("\n")  # lines keep their numbers
    lines = masked.splitlines()
    assert lines[3] == 'title: "Deploy with [secret masked: github-token]"'
    assert lines[12] == "export AWS_ACCESS_KEY_ID=[secret masked: aws-access-key-id]"
    assert lines[13:16] == ["[secret masked: private-key]"] * 3  # the key, not just its header
    assert lines[16] == "Rotate it after use."
    assert memoryrail.scan_text(masked, path="m.md") == []  # the marker is not a finding
    assert secrets_mask(masked)[0] == masked


def test_it_masks_front_matter_values_as_the_lines_the_scanner_read():
    masked = secrets_mask_front_matter(
        {
            "api_token": API_TOKEN,  # flagged as the line `api_token: …`, not as a bare value
            "password": 12345678,
            "links": ["src/db", f"https://bob:{PASSWORD}@example.com/x"],
            "nested": {"secret_key": f"{PASSWORD}"},
            "pinned": True,
            "title": "Plain",
        }
    )
    assert_masked(json.dumps(masked))
    assert masked["api_token"] == "[secret masked: credential-assignment]"
    assert masked["password"] == "[secret masked: credential-assignment]"
    assert masked["links"][0] == "src/db"
    assert masked["links"][1] == "https://[secret masked: url-credentials]@example.com/x"
    assert (masked["pinned"], masked["title"]) == (True, "Plain")


PIECES = st.sampled_from(
    [
        GITHUB,
        AWS,
        PEM_BODY,
        "-----BEGIN PRIVATE KEY-----",
        "-----END PRIVATE KEY-----",
        "password=",
        "token: ",
        "api_key = '",
        "https://",
        "bob:",
        "@",
        "xoxb-1234567890-abcdef",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
        "sk_live_" + "a1" * 12,
        "[secret masked: jwt]",
        "hunter2Hunter2x",
        " ",
        "\n",
        "\r\n",
        "\u2028",
        '"',
        "x",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, max_size=30).map("".join))
def test_it_masks_any_text_to_one_that_scans_clean_with_the_same_findings_and_lines(text):
    masked, findings = secrets_mask(text, path="m.md")
    assert findings == memoryrail.scan_text(text, path="m.md")
    assert len(masked.splitlines()) == len(text.splitlines())
    assert memoryrail.scan_text(masked, path="m.md") == []
    assert secrets_mask(masked)[0] == masked


# --- pages -----------------------------------------------------------------------------------


def test_it_shows_a_viewer_the_proposal_with_rule_and_line_but_not_the_value(
    client, viewer_user, leaky
):
    client.force_login(viewer_user)
    response = client.get(reverse("proposal-detail", args=["alpha", leaky.pk]))
    page = response.content.decode()
    assert response.status_code == 200
    assert_masked(page)
    assert_rules_and_lines(page)
    assert "Deploy with [secret masked: github-token]" in page  # <title> and heading
    assert "[secret masked: private-key]" in page and "[secret masked: url-credentials]" in page
    assert "Rotate it after use." in page
    assert "Reveal once" not in page  # viewers cannot reveal


def test_it_masks_titles_in_the_queue_and_the_decision_history(
    client, reviewer_user, leaky, django_capture_on_commit_callbacks
):
    client.force_login(reviewer_user)
    queue = client.get(reverse("review-queue", args=["alpha"])).content.decode()
    assert leaky.ref in queue and "Deploy with [secret masked: github-token]" in queue
    assert_masked(queue)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("proposal-reject", args=["alpha", leaky.pk]), {"comment": "No keys in memory"}
        )
    assert Decision.objects.get().state == PushState.PUSHED
    history = client.get(reverse("review-history", args=["alpha"])).content.decode()
    assert leaky.ref in history and "Deploy with [secret masked: github-token]" in history
    assert_masked(history)


def test_it_masks_problem_messages_that_quote_a_file_on_the_repository_page_and_api(
    client, viewer_user, token_client, team, repository, remote
):
    broken = memory_text(
        "20260302-broken", status="proposed", links=[f"src\\https://bob:{PASSWORD}@example.com/x"]
    )
    remote.commit({f"{M}/20260302-broken.md": broken}, "A link with credentials")
    repository_sync(repository_id=repository.pk)
    repository.refresh_from_db()
    assert PASSWORD in json.dumps(repository.problems)  # the reader quotes the link
    client.force_login(viewer_user)
    page = client.get(reverse("repository-detail", args=["alpha", repository.pk])).content.decode()
    assert "link-invalid" in page and "[secret masked: url-credentials]" in page
    assert PASSWORD not in page
    api = token_client(team, ["reviews:read"]).get(f"/api/reviews/repositories/{repository.pk}/")
    assert api.status_code == 200
    assert "link-invalid" in api.content.decode() and PASSWORD not in api.content.decode()


# --- the API ---------------------------------------------------------------------------------


def test_it_masks_body_front_matter_and_title_in_the_proposals_api(token_client, team, leaky):
    client = token_client(team, ["reviews:read"])
    detail = client.get(f"/api/reviews/proposals/{leaky.ref}/")
    assert detail.status_code == 200
    assert_masked(detail.content.decode())
    data = detail.json()
    assert data["title"] == "Deploy with [secret masked: github-token]"
    assert data["front_matter"]["api_token"] == "[secret masked: credential-assignment]"
    assert data["front_matter"]["notes"] == "db password=[secret masked: credential-assignment]"
    assert data["front_matter"]["title"] == data["title"]
    assert "[secret masked: aws-access-key-id]" in data["body"]
    assert data["body"].count("\n") == leaky.body.count("\n")
    assert [(f["rule"], f["line"]) for f in data["secret_findings"]] == FINDINGS
    listing = client.get("/api/reviews/proposals/", {"flag": "secret"})
    assert listing.status_code == 200
    assert_masked(listing.content.decode())
    assert "Deploy with [secret masked: github-token]" in listing.content.decode()
    superseded = client.get(f"/api/reviews/proposals/{POSTGRES}/")
    assert superseded.status_code == 200 and DB_PASSWORD not in superseded.content.decode()


# --- audit log and commit messages -----------------------------------------------------------


def test_it_keeps_the_value_out_of_the_audit_log_and_the_commits_of_two_approvals(
    client,
    reviewer_user,
    admin_user,
    team,
    leaky,
    remote,
    django_capture_on_commit_callbacks,
):
    ReviewSettings.objects.create(team=team, require_two_approvals=True)
    url = reverse("proposal-approve", args=["alpha", leaky.pk])
    reason = "Test-only key, revoked already"
    client.force_login(reviewer_user)
    client.post(url, {"comment": "ok", "override_reason": reason})
    assert AuditEvent.objects.filter(action="review.first-approval").exists()
    client.force_login(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url, {"comment": "second look", "override_reason": reason})
    decision = Decision.objects.get()
    assert decision.state == PushState.PUSHED, decision.state_detail
    message = git(remote.bare, "log", "-1", "--format=%B", "main")
    assert message.startswith(f"Approve {leaky.ref}: Deploy with [secret masked: github-token]")
    assert_masked(message)
    assert f"Memoryadmin-Decision: {decision.pk}" in message
    # The file is the agent's proposal, approved knowingly with an override: written as-is.
    assert GITHUB in remote.show(f"{M}/{LEAKY}.md")
    log = audit_text()
    assert "review.first-approval" in log and "review.approve" in log
    assert "review.secret-override" in log and "review.push-pushed" in log
    assert f"{leaky.ref} Deploy with [secret masked: github-token]" in log
    assert_masked(log)


def test_it_keeps_the_value_out_of_a_rejection_made_through_the_api(
    token_client, team, leaky, remote, django_capture_on_commit_callbacks
):
    client = token_client(team, ["reviews:write"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/reviews/batch/",
            {
                "action": "reject",
                "proposals": [leaky.ref, "20260203-cache-attempt"],
                "comment": "Keys do not belong here",
            },
            format="json",
        )
    assert response.status_code == 202, response.content
    assert Decision.objects.get().state == PushState.PUSHED
    message = git(remote.bare, "log", "-1", "--format=%B", "main")
    assert f"- {leaky.ref}: Deploy with [secret masked: github-token]" in message
    assert_masked(message)
    assert not remote.exists(f"{M}/{LEAKY}.md")
    assert_masked(audit_text())
    assert_masked(json.dumps(list(Decision.objects.values("items__title"))))


@pytest.mark.worker
def test_it_pushes_a_masked_commit_message_from_a_real_worker(
    celery_worker, settings, team, make_user, make_token, api_client, remote
):
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True  # the in-process sync checks it too
    make_user("rita", team=team, role=Role.REVIEWER)
    repository = repository_create(
        actor=Actor.system(), team=team, name="app", remote_url=remote.url, allow_local=True
    )
    try:
        remote.commit(leaky_files(), "Agent proposes a deploy note")
        repository_sync(repository_id=repository.pk)
        memory = Memory.objects.get(repository=repository, memory_id=LEAKY)
        api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(team, ['reviews:write'])}")
        response = api_client.post(
            f"/api/reviews/proposals/{memory.ref}/approve/",
            {"override_reason": "revoked test key"},
            format="json",
        )
        assert response.status_code == 202, response.content
        assert_masked(response.content.decode())
        decision_id = response.json()["id"]
        wait_for(
            lambda: Decision.objects.get(pk=decision_id).state != PushState.PENDING, timeout=60
        )
        decision = Decision.objects.get(pk=decision_id)
        assert decision.state == PushState.PUSHED, decision.state_detail
        message = git(remote.bare, "log", "-1", "--format=%B", "main")
        assert "Deploy with [secret masked: github-token]" in message
        assert_masked(message)
        assert_masked(audit_text())
    finally:
        shutil.rmtree(repository.working_dir, ignore_errors=True)


# --- webhooks --------------------------------------------------------------------------------


def test_it_sends_webhook_payloads_without_the_value(
    team,
    repository,
    remote,
    receiver,  # noqa: F811
    make_endpoint,  # noqa: F811
    reviewer_user,
    django_capture_on_commit_callbacks,
):
    make_endpoint(receiver.url("/hook"))
    remote.commit(leaky_files(), "Agent proposes a deploy note")
    with django_capture_on_commit_callbacks(execute=True):
        repository_sync(repository_id=repository.pk)
    memory = Memory.objects.get(repository=repository, memory_id=LEAKY)
    with django_capture_on_commit_callbacks(execute=True):
        proposal_approve(
            actor=Actor(user=reviewer_user), memory=memory, override_reason="revoked test key"
        )
    bodies = [json.loads(r.body) for r in receiver.requests]
    events = {body["event"]: body["data"] for body in bodies}
    assert set(events) == {"proposal.created", "decision.made"}
    assert events["proposal.created"]["title"] == "Deploy with [secret masked: github-token]"
    assert events["decision.made"]["proposals"][0]["title"] == events["proposal.created"]["title"]
    for r in receiver.requests:
        assert_masked(r.body.decode())
    for payload in WebhookDelivery.objects.values_list("payload", flat=True):
        assert_masked(json.dumps(payload))


# --- reveal ----------------------------------------------------------------------------------


def test_it_refuses_a_reveal_to_viewers_outsiders_and_reviewers_without_a_reason(
    client, viewer_user, reviewer_user, make_user, other_team, leaky
):
    url = reverse("proposal-reveal", args=["alpha", leaky.pk])
    client.force_login(viewer_user)
    assert client.post(url, {"reason": "curious"}).status_code == 403
    client.force_login(make_user("olga", team=other_team, role=Role.ADMIN))
    assert client.post(url, {"reason": "curious"}).status_code == 404
    client.force_login(reviewer_user)
    response = client.post(url, {"reason": "   "})
    assert response.status_code == 400
    page = response.content.decode()
    assert "Say why you need to see the masked text" in page
    assert_masked(page)
    assert not AuditEvent.objects.filter(action="review.secret-reveal").exists()


def test_it_reveals_the_value_once_to_a_reviewer_with_a_reason_and_audits_it(
    client, reviewer_user, leaky
):
    client.force_login(reviewer_user)
    reason = f"Check whether it is the revoked key (not {GITHUB})"
    response = client.post(reverse("proposal-reveal", args=["alpha", leaky.pk]), {"reason": reason})
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    page = response.content.decode()
    assert GITHUB in page and AWS in page and PEM_BODY in page and API_TOKEN in page
    assert "Shown unmasked, once" in page
    event = AuditEvent.objects.get(action="review.secret-reveal")
    assert event.actor_label == "user:rita" and event.target_id == str(leaky.pk)
    assert event.data["reason"].startswith("Check whether it is the revoked key")
    assert [(f["rule"], f["line"]) for f in event.data["findings"]] == FINDINGS
    assert_masked(f"{event.summary} {json.dumps(event.data)}")
    # the next view is masked again
    again = client.get(reverse("proposal-detail", args=["alpha", leaky.pk])).content.decode()
    assert_masked(again)


def test_it_reveals_through_the_api_only_with_the_write_scope_and_a_reason(
    token_client, team, leaky
):
    url = f"/api/reviews/proposals/{leaky.ref}/reveal/"
    reader = token_client(team, ["reviews:read"])
    assert reader.post(url, {"reason": "curious"}, format="json").status_code == 403
    writer = token_client(team, ["reviews:write"])
    missing = writer.post(url, {}, format="json")
    assert missing.status_code == 400
    assert missing.json()["error"]["code"] == "reason-required"
    assert set(missing.json()["error"]) == {"code", "message", "details"}
    response = writer.post(url, {"reason": "incident 42: which key leaked"}, format="json")
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    data = response.json()
    assert data["title"] == f"Deploy with {GITHUB}" and AWS in data["body"]
    assert data["front_matter"]["api_token"] == API_TOKEN
    event = AuditEvent.objects.get(action="review.secret-reveal")
    assert event.actor_label.startswith("token:")
    assert event.data["reason"] == "incident 42: which key leaked"
    assert event.data["rules"] == sorted({rule for rule, _ in FINDINGS})
    assert_masked(json.dumps(event.data))
    clean = writer.post(
        "/api/reviews/proposals/20260203-cache-attempt/reveal/", {"reason": "x"}, format="json"
    )
    assert clean.status_code == 409 and clean.json()["error"]["code"] == "nothing-masked"


def test_it_masks_memories_and_decision_items_in_the_django_admin(
    client, make_user, leaky, reviewer_user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        proposal_approve(
            actor=Actor(user=reviewer_user), memory=leaky, override_reason="revoked test key"
        )
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    pages = [
        "/admin/reviews/memory/",
        f"/admin/reviews/memory/{leaky.pk}/change/",
        f"/admin/reviews/decision/{Decision.objects.get().pk}/change/",
    ]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        assert_masked(response.content.decode())
    memory_page = client.get(pages[1]).content.decode()
    assert "[secret masked: private-key]" in memory_page and "api_token" in memory_page


def test_it_masks_a_link_quoted_in_a_staleness_report(
    client, viewer_user, token_client, team, repository, remote
):
    escaping = memory_text(
        "20260303-escaping", status="proposed", links=[f"../https://bob:{PASSWORD}@example.com/x"]
    )
    remote.commit({f"{M}/20260303-escaping.md": escaping}, "A link outside, with credentials")
    repository_sync(repository_id=repository.pk)
    memory = Memory.objects.get(repository=repository, memory_id="20260303-escaping")
    assert PASSWORD in json.dumps(memory.stale)  # the report quotes the link
    client.force_login(viewer_user)
    page = client.get(reverse("proposal-detail", args=["alpha", memory.pk])).content.decode()
    assert "link-outside-repo" in page and PASSWORD not in page
    api = token_client(team, ["reviews:read"]).get(f"/api/reviews/proposals/{memory.ref}/")
    assert api.status_code == 200
    assert "link-outside-repo" in api.content.decode() and PASSWORD not in api.content.decode()
