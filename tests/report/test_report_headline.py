"""Issue 33 on the report page: the full-ranking table leads, the sampled columns beside it
are labelled with their negatives, every cell is a mean with a 95% interval; an older
results file (no full top-K lists, no intervals) still reads."""

from report_docs import run_doc

from dprec.report.view import metric_tables


def _with_lists(system: str, hr10: float) -> dict:
    doc = run_doc(system, hr10)
    doc["metrics"]["full-topk"] = {
        "HR@10": {"mean": hr10 / 3, "std": 0.01, "ci95": 0.0248, "n": 3},
        "Recall@20": {"mean": hr10 / 2, "std": 0.01, "ci95": 0.0248, "n": 3},
        "NDCG@10": {"mean": hr10 / 6, "std": 0.0, "ci95": 0.0, "n": 3},
        "MRR": {"mean": hr10 / 7, "std": 0.0, "ci95": 0.0, "n": 3},
        "Coverage@10": {"mean": 0.25, "std": 0.0, "ci95": None, "n": 1}}
    return doc


def test_the_full_ranking_table_comes_first():
    tables = metric_tables({"popularity": _with_lists("popularity", 0.39),
                            "ease": _with_lists("ease", 0.6)})
    first = tables[0]
    assert first.caption == "full ranking over all unseen items; sampled (99 negatives) beside"
    headers = [c.header for c in first.columns]
    assert headers[:5] == ["HR@10", "Recall@20", "NDCG@10", "MRR", "Coverage@10"]
    assert "HR@10 sampled (99 negatives)" in headers
    ease = dict(first.rows)["ease"]
    assert ease[0] == "0.2000 ± 0.0248" and ease[4] == "0.2500 (1 seed)"
    # then one table per protocol, full ranking first, sampled last
    assert [t.caption for t in tables[1:]] == [
        "full ranking, every top-K list metric", "full ranking, random ties",
        "sampled (99 negatives)"]


def test_an_older_file_without_lists_or_intervals_still_reads():
    tables = metric_tables({"popularity": run_doc("popularity", 0.39)})
    assert [t.caption for t in tables] == ["full ranking, random ties",
                                           "sampled (99 negatives)"]
    # 2 seeds, std 0.01: t_{.975,1} 0.01 / sqrt 2 = 0.0898
    assert dict(tables[1].rows)["popularity"][2] == "0.3900 ± 0.0898"  # HR@10


def test_the_figures_lead_with_full_ranking_and_name_the_sampled_protocol(report_html):
    text = report_html
    full = text.index("HR@K (full ranking, random ties)")
    assert full < text.index("HR@K (sampled (99 negatives))")
    assert "HR@10, sampled (99 negatives) against the per-user ε" in text
