"""REST API for reviews: repositories, proposals (by pk, id or ref), approve, reject, batch,
decisions, the retry of a failed push and lifting a rejection for imports.

Decisions made with a token record the token as the actor; their commits are authored by the
token's creator when there is one, else by the configured bot identity (REVIEW_BOT_IDENTITY).
The views parse, call one service and render: the services' refusals are domain errors that
memoryadmin.api_errors answers (one table). By area: `repositories`, `proposals`, `decisions`;
`schemas` holds the scopes and the OpenAPI pieces they share.
"""
