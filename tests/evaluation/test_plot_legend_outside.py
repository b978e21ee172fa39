"""plot_metric_vs_eps(legend_outside=True): the legend sits right of the axes, off the
curves (the frontier plot of issue 24 draws 15 systems and 3 reference lines)."""

from __future__ import annotations

import pytest

from dprec.evaluation import plots


@pytest.mark.parametrize("outside", [False, True])
def test_the_legend_is_right_of_the_axes_only_when_asked(tmp_path, monkeypatch, outside):
    figures = []
    close = plots.plt.close
    monkeypatch.setattr(plots.plt, "close", lambda fig: (figures.append(fig), close(fig)))
    sweep = {f"s{i}": [{"user_epsilon": e, "mean": 0.1 * i, "std": 0.0, "sides": "two"}
                       for e in (0.5, 1.0, 2.0)] for i in range(6)}
    plots.plot_metric_vs_eps(sweep, tmp_path / "p.png", "t", references={"pop": 0.3},
                             x="user_epsilon", log_x=True, legend_outside=outside)
    (fig,) = figures
    ax = fig.axes[0]
    fig.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    axes = ax.get_window_extent()
    assert bool(legend.x0 >= axes.x1) == outside
    assert len(ax.get_legend().get_texts()) == 7
