"""Published numbers printed beside ours (never used as results).

All are on MovieLens-20M, which is not available offline, so they sit in a column labelled
as such beside our ML-100K numbers.

DPLCF paper (Gao et al., SIGIR 2020), Table 3, MovieLens-20M (>= 60 interactions,
74,529 users x 9,953 items), eps = 1, 20 neighbours, latest-item leave-one-out with 99
sampled negatives. The paper's own table (docs/architecture.md §1).
"""

__all__ = ["DPLCF_PAPER_DATASET", "DPLCF_PAPER_ML20M", "FMF_PAPER_ML20M", "PAPER_ML20M"]

DPLCF_PAPER_DATASET = "ML-20M (paper)"

DPLCF_PAPER_ML20M: dict[str, dict[str, float]] = {
    "lcf-ub": {"HR@2": 0.4675, "HR@5": 0.7006, "HR@10": 0.8505, "NDCG@10": 0.5661},
    "lcf-ap": {"HR@2": 0.3662, "HR@5": 0.5541, "HR@10": 0.7030, "NDCG@10": 0.4559},
    "lcf-sp": {"HR@2": 0.3661, "HR@5": 0.5440, "HR@10": 0.6763, "NDCG@10": 0.4470},
    "dplcf-ap": {"HR@2": 0.3513, "HR@5": 0.5351, "HR@10": 0.6962, "NDCG@10": 0.4454},
    "dplcf-sp": {"HR@2": 0.4203, "HR@5": 0.5969, "HR@10": 0.7000, "NDCG@10": 0.4870},
    "random": {"HR@2": 0.0200, "HR@5": 0.0500, "HR@10": 0.1000},
}

# FMF-LDP paper (docs/architecture.md §2), full ML-20M (75,040 users x 9,781 items), latest-item
# leave-one-out, 99 negatives, eps = 2.5 per report, k = 100, 20 epochs.
FMF_PAPER_ML20M: dict[str, dict[str, float]] = {
    "mf-np": {"HR@2": 0.4310, "HR@5": 0.6700, "HR@10": 0.8179},
    "fmf-ldp": {"HR@2": 0.2163, "HR@5": 0.3755, "HR@10": 0.5131},
}

PAPER_ML20M: dict[str, dict[str, float]] = {**DPLCF_PAPER_ML20M, **FMF_PAPER_ML20M}
