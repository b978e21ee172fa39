"""An audit whose lower bound is above the claim fails loudly (issue 31 §5): a message, exit
status 1 and ``violates_claim`` in the JSON. The Skellam noise is halved by a mutant of
:meth:`SkellamMechanism.noise` (the mechanism audit) or of :meth:`SkellamMechanism.share`
(a calibration bug, which only the audit of a run's drawn noise against its reported eps
can see)."""

from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import pytest
from typer.testing import CliRunner

from dprec.audit import AuditSettings, audit
from dprec.audit.runs import audit_secure_sum_run
from dprec.cli import app
from dprec.data.synthetic import synthetic
from dprec.errors import DprecError
from dprec.mechanisms.skellam import SkellamMechanism
from dprec.systems.registry import make_system

runner = CliRunner()


def _half_noise(self: SkellamMechanism, shape, rng: np.random.Generator) -> np.ndarray:
    return (rng.poisson(self.mu / 2, shape) - rng.poisson(self.mu / 2, shape)).astype(np.int64)


def _half_share(self: SkellamMechanism, n_clients: int, min_honest: int | None = None
                ) -> SkellamMechanism:
    return SkellamMechanism(self.mu / (2 * (n_clients if min_honest is None else min_honest)))


def test_half_the_noise_at_mu_10_fails_the_skellam_audit(monkeypatch) -> None:
    """Claimed (PLD) eps at mu 10, delta 1e-3: 0.503; the mutant's true eps 0.730."""
    args = ["audit", "skellam", "--param", "mu=10", "--trials", "300000"]
    ok = runner.invoke(app, args)
    assert ok.exit_code == 0, ok.output
    assert "VIOLATES" not in ok.output
    monkeypatch.setattr(SkellamMechanism, "noise", _half_noise)
    bad = runner.invoke(app, args)
    assert bad.exit_code == 1, bad.output
    assert "AUDIT FAILED" in bad.output and "VIOLATES THE CLAIM" in bad.output
    js = runner.invoke(app, [*args, "--json"])
    assert js.exit_code == 1
    doc = json.loads(js.stdout[:js.stdout.rindex("}") + 1])
    assert doc["violates_claim"] is True and doc["violation_expected"] is False
    assert doc["empirical_lower"] > doc["claimed_epsilon"]


def test_a_published_claim_the_analysis_refutes_is_an_expected_violation() -> None:
    r = audit("laplace-rr", params={"eps1": "1", "eps2": "1"},
              settings=AuditSettings(trials=3000, alpha=0.05))
    assert r.violates_claim and r.violation_expected
    assert "as the analysis predicts" in r.violation_message()


def _pop_run(k: int = 1) -> dict[str, object]:
    """A dp-pop run's JSON (the keys the run audit reads) at eps 1, delta 1e-3."""
    train = synthetic(60, 40, 1_200, rng=1).binary()
    model = make_system("dp-pop", {"epsilon": 1.0, "delta": 1e-3, "k": k, "min_honest": 20})
    model.fit(train, np.random.default_rng(0))
    return {"system": "dp-pop", "parameters": asdict(model.config),
            "dataset": {"items": train.shape[1]}, "privacy": model.privacy_report().to_json()}


def test_the_run_audit_catches_shares_that_miss_the_reported_eps(monkeypatch) -> None:
    """The run reports eps ~1 (its accountant, honest); its clients then draw half the
    share (a calibration bug): the audit of the drawn noise against the reported eps fails,
    where the accountant-calibrated skellam audit would move with the bug."""
    doc = _pop_run()
    settings = AuditSettings(trials=300_000, seed=2)
    honest = audit_secure_sum_run(doc, settings)
    assert not honest.violates_claim
    assert honest.claimed_epsilon == doc["privacy"]["true"]["epsilon"]  # type: ignore[index]
    assert honest.extra["drawn"]["share_mu"] == pytest.approx(  # type: ignore[index]
        doc["privacy"]["mechanisms"][0]["share_mu"])  # type: ignore[index]
    monkeypatch.setattr(SkellamMechanism, "share", _half_share)
    broken = audit_secure_sum_run(doc, settings)
    assert broken.violates_claim and not broken.violation_expected, broken.empirical_lower


def test_the_run_audit_reads_a_saved_run_through_the_cli(tmp_path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_pop_run(k=3)))
    res = runner.invoke(app, ["audit", "skellam-run", "--param", f"run={path}",
                              "--trials", "20000", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["name"] == "dp-pop-run" and doc["params"]["k"] == 3
    assert doc["violates_claim"] is False
    missing = runner.invoke(app, ["audit", "skellam-run", "--param",
                                  f"run={tmp_path / 'nope.json'}"])
    assert missing.exit_code == 2 and "no run JSON" in missing.output


@pytest.mark.slow  # a dpals run, then its audit
def test_the_run_audit_draws_dpals_count_shares_from_the_share_tree() -> None:
    train = synthetic(40, 40, 800, rng=2).binary()
    model = make_system("dpals", {"epsilon": "3", "weighting": "tail", "steps": "1",
                                  "factors": "2", "k": "4", "min_honest": "10"})
    model.fit(train, np.random.default_rng(0))
    doc = {"system": "dpals", "parameters": asdict(model.config),
           "dataset": {"items": 40}, "privacy": model.privacy_report().to_json()}
    r = audit_secure_sum_run(doc, AuditSettings(trials=20_000))
    counts = [m for m in doc["privacy"]["mechanisms"] if m["release"] == "item_counts"][0]
    assert r.extra["drawn"]["share_mu"] == counts["share_mu"]  # type: ignore[index]
    assert r.params["k"] == 4 and not r.violates_claim
    with pytest.raises(DprecError, match="uniform"):
        audit_secure_sum_run({**doc, "parameters": {**doc["parameters"],
                                                     "weighting": "uniform"}},
                             AuditSettings(trials=100))


@pytest.mark.slow
def test_half_the_noise_at_dp_pops_setting_fails_at_ten_million_trials(monkeypatch) -> None:
    """dp-pop: eps 1 at delta 1e-6, k = 50 (mu = 448.25); the mutant's true eps is 1.453.
    Measured (seeds 0-4): honest 0.76-0.80, mutant 1.107-1.186 at 10^7 trials (5 of 5
    caught); at 10^6 trials 3 of 10 seeds catch it."""
    from dprec.audit.mechanisms import audit_skellam
    from dprec.privacy.skellam import calibrate_skellam_mu

    mu = calibrate_skellam_mu(1.0, 1e-6, 50.0, 50 ** 0.5, unit_shifts=50)
    monkeypatch.setattr(SkellamMechanism, "noise", _half_noise)
    r = audit_skellam(mu, 1e-6, AuditSettings(trials=10_000_000, seed=0), k=50)
    assert r.violates_claim and r.empirical_lower > 1.05
