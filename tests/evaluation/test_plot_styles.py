"""The comparison plots a newcomer reads (issue 25 §3): popularity as the bar to clear on the
ε plots, and one clearly different (colour, marker) per system."""

import matplotlib.pyplot as plt
import pytest
from matplotlib.colors import to_rgba

from dprec.evaluation import plots
from dprec.evaluation.compare import save_comparison
from dprec.evaluation.runner import RunResult

KS = [1, 2, 5, 10, 20]
SYSTEMS = ("random", "popularity", "lcf-ub", "lcf-sp", "lcf-ap", "dplcf-sp", "dplcf-ap",
           "dplcf-oue", "dplcf-eb", "bpr-mf", "gmf", "mf-np", "fcf", "fmf-ldp", "dp-pop",
           "dpals")
PRIVATE = ("dplcf-sp", "dplcf-ap", "dplcf-oue", "dplcf-eb", "fmf-ldp")


def _result(name: str, i: int) -> RunResult:
    per_seed = [{p: {f"{m}@{k}": (0.01 * i + 0.002 * k + 0.001 * s) / 2
                     for m in ("HR", "NDCG") for k in KS}
                 for p in ("sampled", "full")} for s in range(2)]
    return RunResult(name, {}, {}, {}, [0, 1], per_seed, None, [], 0.0)


@pytest.fixture(scope="module")
def figures(tmp_path_factory):
    """Every figure save_comparison draws for the 16 default systems, by axes title."""
    results = {n: _result(n, i) for i, n in enumerate(SYSTEMS)}
    sweep = {n: [{"epsilon": e, "mean": 0.05 * e + 0.01 * j, "std": 0.01,
                  "user_epsilon": 10.0 * e, "sides": "two"} for e in (0.5, 1.0, 2.0)]
             for j, n in enumerate(PRIVATE)}
    drawn, close = [], plt.close
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plots.plt, "close", drawn.append)
        save_comparison(tmp_path_factory.mktemp("plots"), "toy", results, sweep, KS)
    yield {fig.axes[0].get_title(): fig.axes[0] for fig in drawn}, results
    for fig in drawn:
        close(fig)


def _styles(ax) -> dict[str, tuple[tuple[float, ...], str]]:
    """label -> (RGBA colour, marker) of each system's line (its error bar's data line)."""
    return {c.get_label(): (to_rgba(c.lines[0].get_color()), c.lines[0].get_marker())
            for c in ax.containers}


def test_the_per_user_eps_plot_draws_popularity_as_the_bar_to_clear(figures):
    axes, results = figures
    ax = axes["HR@10 (sampled) against the per-user ε on toy"]
    popularity = results["popularity"].metrics["sampled"]["HR@10"]["mean"]
    lines = {line.get_label(): line for line in ax.get_lines()}
    line = next(v for k, v in lines.items() if k.startswith("popularity"))
    assert list(line.get_ydata()) == [popularity, popularity]
    assert "non-private" in line.get_label()
    for ref in ("random", "lcf-ub"):  # the other references stay
        assert any(k.startswith(ref) for k in lines)
    dashes = [v.get_linestyle() for k, v in lines.items()
              if k.startswith(("random", "popularity", "lcf-ub"))]
    assert len(set(dashes)) == 3  # told apart by dash pattern, all grey
    assert "popularity (non-private)" in ax.get_legend_handles_labels()[1]


@pytest.mark.parametrize("title", ["HR@K on toy (sampled)", "HR@K on toy (full ranking)",
                                   "HR@10 (sampled) against ε on toy"])
def test_no_two_systems_share_colour_and_marker(figures, title):
    styles = _styles(figures[0][title])
    assert len(styles) in (len(SYSTEMS), len(PRIVATE))
    assert len(set(styles.values())) == len(styles)


def test_ten_systems_get_ten_different_hues_of_a_qualitative_palette(figures):
    styles = _styles(figures[0]["HR@K on toy (sampled)"])
    first = [styles[n][0] for n in SYSTEMS[:10]]
    tab10 = {to_rgba(plt.get_cmap("tab10")(i)) for i in range(10)}
    assert set(first) == tab10  # not tab20's light/dark pairs of one hue


def test_a_system_looks_the_same_in_every_plot(figures):
    axes, _ = figures
    by_k = _styles(axes["HR@K on toy (sampled)"])
    by_eps = _styles(axes["HR@10 (sampled) against ε on toy"])
    for name in PRIVATE:
        assert by_eps[name] == by_k[name], name


def test_system_styles_are_fixed_by_the_order():
    names = [f"s{i}" for i in range(60)]
    styles = plots.system_styles(names)
    assert len({(s["color"], s["marker"]) for s in styles.values()}) == 60
    assert plots.system_styles(["s7", "s3"], order=names) == {
        "s7": styles["s7"], "s3": styles["s3"]}
    assert plots.system_styles(["x"], order=["a"]) == {"x": plots.system_styles(["a", "x"])["x"]}
