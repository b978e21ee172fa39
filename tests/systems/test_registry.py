import dataclasses

import pytest

from dprec.errors import DprecError
from dprec.systems.registry import (
    SYSTEMS,
    config_fields,
    config_to_toml,
    make_config,
    make_system,
    private_systems,
    read_config,
    spec,
)


def test_one_entry_per_system_with_lower_case_paper_names():
    for name, s in SYSTEMS.items():
        assert name == name.lower() == s.name
        assert make_system(name).name == name
        assert make_system(name).task == s.task
    assert {"lcf-sp", "lcf-ap", "dplcf-sp", "dplcf-ap", "dplcf-oue", "dplcf-eb", "bpr-mf",
            "fmf-ldp", "laplace-svd", "laplace-rr-svd", "ldp-svd"} <= set(private_systems())
    assert not {"random", "popularity", "lcf-ub", "mf-np", "fcf", "global-mean", "bias",
                "nondp-svd", "pcc-knn", "cos-knn"} & set(private_systems())


def test_paper_default_epsilons():
    assert make_system("dplcf-sp").config.epsilon == 1.0
    assert make_system("fmf-ldp").config.epsilon == 2.5
    assert make_system("fmf-ldp", {"epsilon": "0.5"}).config.epsilon == 0.5
    assert make_system("bpr-mf", {"epsilon": 2.0}).mechanism.epsilon == pytest.approx(2.0)


def test_params_reach_the_config():
    cfg = make_system("fmf-ldp", {"factors": "3", "user_budget": "500"}).config
    assert (cfg.factors, cfg.user_budget, cfg.exact) == (3, 500.0, False)
    assert make_system("bpr-mf", {"epochs": "7"}).model.config.epochs == 7
    lcf = make_system("dplcf-eb", {"batch_size": "64"})
    assert lcf.config.batch_size == 64 and lcf.config.estimator == "eb"


@pytest.mark.parametrize("name, params, message", [
    ("fmf-ldp", {"colour": "red"}, "fmf-ldp has no option colour; its options: factors"),
    ("fmf-ldp", {"factors": "five"}, "factors must be int"),
    ("fmf-ldp", {"mechanism": "gauss"}, "mechanism must be 'binary' or 'piecewise' or 'none'"),
    ("random", {"k": "1"}, "its options: none"),
    ("bpr-mf", {"k": "5"}, "bpr-mf has no option k"),
    ("dplcf-sp", {"k": "5"}, "dplcf-sp has no option k"),
    ("fcf", {"exact": "false"}, "exact fixed by the system name"),
    ("dplcf-sp", {"flip": "none"}, "flip fixed by the system name"),
    ("fmf-ldp", {"k": "0"}, "k must be >= 1"),
    ("dplcf", {}, "unknown system"),
])
def test_options_a_system_does_not_use_are_errors(name, params, message):
    with pytest.raises(DprecError, match=message):
        make_system(name, params)


def test_config_fields_have_docs_and_defaults():
    rows = {r[0]: r for r in config_fields("fmf-ldp")}
    assert rows["k"][2] == 100 and "reports per client" in rows["k"][3].lower()
    assert rows["exact"][4] is True and rows["epsilon"][4] is False
    assert all(r[3] for r in config_fields("dplcf-sp")), "every DPLCF field is documented"
    bpr = {r[0] for r in config_fields("bpr-mf")}
    assert {"epsilon", "epochs", "factors"} <= bpr


def test_toml_round_trip(tmp_path):
    cfg = make_config("fcf", {"lr": "0.03", "epochs": "7"})
    path = tmp_path / "fcf.toml"
    path.write_text(config_to_toml("fcf", cfg, {"command": "dprec tune fcf", "score": 0.5}))
    cf = read_config(path)
    assert cf.system == "fcf" and cf.provenance["score"] == 0.5
    assert make_config("fcf", cf.params) == cfg
    assert dataclasses.asdict(make_config("fcf", cf.params))["exact"] is True


@pytest.mark.parametrize("text, message", [
    ("system = 'fcf'\n[config]\nlr = 'fast'\n", "lr must be float"),
    ("system = 'fcf'\n[config]\ncolour = 1\n", "has no option colour"),
    ("[config]\nlr = 1\n", "must name its system"),
    ("system = 'nope'\n", "unknown system"),
    ("system = 'fcf'\n[config\n", "not valid TOML"),
    ("system = 'fcf'\nextra = 1\n", "unknown top-level"),
])
def test_bad_config_files(tmp_path, text, message):
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(DprecError, match=message):
        read_config(path)


def test_missing_config_file(tmp_path):
    with pytest.raises(DprecError, match="does not exist"):
        read_config(tmp_path / "none.toml")


def test_paper_preset():
    assert spec("ldp-svd").paper_config().noise_weighting is False
    assert spec("ldp-svd").default_config().noise_weighting is True
    assert spec("dplcf-sp").paper_config() == spec("dplcf-sp").default_config()


def test_spec_lookup():
    assert spec("fcf").default_grid and not spec("fcf").private


@pytest.mark.parametrize("label, want", [
    ("bias", ("bias", {})),
    ("bias[damping=0]", ("bias", {"damping": "0"})),
    (" fmf-ldp[k=5, epochs=2] ", ("fmf-ldp", {"k": "5", "epochs": "2"})),
])
def test_parse_label(label, want):
    from dprec.systems.registry import parse_label
    assert parse_label(label) == want


@pytest.mark.parametrize("label, message", [
    ("bias[damping=0", "must look like NAME"), ("bias[damping]", "is not KEY=VALUE"),
    ("nope[k=1]", "unknown system"),
])
def test_bad_labels(label, message):
    from dprec.systems.registry import parse_label
    with pytest.raises(DprecError, match=message):
        parse_label(label)
