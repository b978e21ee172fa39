"""dp-pop: private item popularity at user level by a secure sum with Skellam noise, and its
local-DP counterpart ldp-pop (issue 23 §3)."""

__all__: list[str] = []
