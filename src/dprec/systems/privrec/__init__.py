"""PrivRec and DP-PrivRec (seed 002): federated meta-learned side-feature recommender."""

__all__: list[str] = []

