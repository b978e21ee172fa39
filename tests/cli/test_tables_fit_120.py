"""`dprec compare`'s tables in a 120-column log: every number whole (issue 25 §3)."""

from types import SimpleNamespace

import pytest
from rich.cells import cell_len
from rich.console import Console

from dprec.cli import compare as compare_cli
from dprec.cli import tables
from dprec.evaluation.compare import table_metrics
from dprec.evaluation.intervals import format_interval
from dprec.evaluation.paper_numbers import PAPER_ML20M

SYSTEMS = (
    "random", "popularity", "lcf-ub", "lcf-sp", "lcf-ap", "dplcf-sp", "dplcf-ap", "dplcf-oue",
    "dplcf-eb", "bpr-mf", "gmf", "mf-np", "fcf", "fmf-ldp", "dp-pop", "dpals",
    "ldp-svd[mechanism=piecewise,epsilon=2]",
)
RANKING = ("HR@1", "HR@2", "HR@5", "HR@10", "HR@20", "NDCG@10")
PRIVREC = ("HR@5", "HR@10", "HR@20", "HR@30", "NDCG@5", "NDCG@10", "NDCG@20", "NDCG@30")


def _levels(i: int) -> dict | None:
    if i % 3 == 0:
        return None
    g = {"epsilon": "inf" if i % 3 == 2 else 12.345 * i, "delta": 1e-6, "sides": "two",
         "model": "add/remove"}
    return {"levels": {"event": g, "user": g, "user_basic": g}}


def _docs(protocols: dict[str, tuple[str, ...]]) -> dict[str, dict]:
    return {name: {"metrics": {p: {m: {"mean": 0.10274 + i / 97 + j / 1013,
                                        "std": 0.01234 + j / 7919}
                                    for j, m in enumerate(ms)}
                               for p, ms in protocols.items()},
                   "privacy": _levels(i), "seeds": [0, 1, 2, 3, 4]}
            for i, name in enumerate(SYSTEMS)}


@pytest.fixture
def screen(monkeypatch):
    console = Console(width=120, record=True, color_system=None)
    monkeypatch.setattr(tables, "out", console)
    monkeypatch.setattr(compare_cli, "out", console)
    return console


def _check_whole(text: str, docs: dict[str, dict]) -> None:
    assert "…" not in text
    assert max(cell_len(line) for line in text.splitlines()) <= 120
    for name, doc in docs.items():
        assert name in text
        for proto, metrics in doc["metrics"].items():
            for m in table_metrics(list(metrics)):  # results.csv holds the rest
                assert format_interval(metrics[m], 5) in text, (name, proto, m)


LISTS = ("HR@10", "HR@20", "Recall@10", "Recall@20", "NDCG@10", "NDCG@20", "MRR",
         "Coverage@10", "Coverage@20")


@pytest.mark.parametrize("protocols", [
    {"sampled": RANKING, "full": RANKING},
    {"full": PRIVREC},
    {"sampled": RANKING, "full": RANKING, "full-topk": LISTS},
])
def test_every_mean_and_interval_is_whole_at_120_columns(screen, protocols):
    docs = _docs(protocols)
    tables.print_tables("ml-100k, ε=paper default, 5 seeds; tuned configs: none",
                        docs)
    text = screen.export_text()
    _check_whole(text, docs)
    for eps in ("12.3, δ=1e-06", "∞, δ=1e-06", "—"):
        assert eps in text
    if "sampled" in protocols:  # the paper's numbers, whole, for the systems it reports
        paper = {n: v for n, v in PAPER_ML20M.items() if n in docs}
        assert paper
        for v in paper.values():
            for x in v.values():
                assert f"{x:.4f}" in text


def test_the_sweep_table_is_whole_at_120_columns(screen):
    docs = _docs({"sampled": RANKING, "full": RANKING})
    grid = [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
    sweep = {n: [{"epsilon": e, "mean": 0.2 + e / 31, "std": 0.01 + e / 977,
                  "user_epsilon": 123.456 * e, "sides": "two"} for e in grid if e != 2.5]
             for n in SYSTEMS[5:9]}
    plan = SimpleNamespace(files={}, dataset="ml-100k", epsilon=None, seeds=5,
                           task="ranking", sweep_seeds=3, grid=grid)
    compare_cli.print_comparison(plan, docs, sweep)
    text = screen.export_text()
    _check_whole(text, docs)
    for n, pts in sweep.items():
        for p in pts:
            assert (f"{format_interval(p, 3)} [{p['user_epsilon']:.3g}]" in text), n
    assert text.count("failed") == len(sweep)


def test_the_full_ranking_table_comes_first_with_the_sampled_hr_beside(screen):
    docs = {n: d for n, d in _docs({"sampled": RANKING, "full": RANKING, "full-topk": LISTS})
            .items() if "[" not in n}  # the ranking comparison's labels
    tables.print_tables("ml-100k, 5 seeds", docs)
    text = screen.export_text()
    first = text.index("full ranking over all unseen items")
    assert first < text.index("ml-100k, 5 seeds — sampled (99 negatives)")
    head = text[first:text.index("ml-100k, 5 seeds — sampled (99 negatives)")]
    assert "part 1" not in head  # one table, every column whole at 120
    for m in ("HR@10", "Recall@20", "NDCG@10", "MRR", "Coverage@10", "sampled HR@10"):
        assert m in head
    mrr = docs["popularity"]["metrics"]["full-topk"]["MRR"]
    assert format_interval(mrr, 5, digits=3) in head
