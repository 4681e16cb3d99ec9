"""Usage of the team's served memory by agents: counters kept on the read path in one upsert
(counting.py), and the views of them people look at (selectors.py). docs/agents.md, "Usage"."""
