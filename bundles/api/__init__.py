"""The brain's HTTP API, NetBox style: `imports`, `exports`, `context`, and `schemas`."""
