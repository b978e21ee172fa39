"""The public entry points raise errors that say what they are (dprec.errors), still
``ValueError`` subclasses for callers that catch that, with their messages unchanged."""

import numpy as np
import pytest

from dprec.data.dataset import Dataset
from dprec.data.filters import binarise, min_interactions
from dprec.data.registry import load_dataset
from dprec.errors import (
    DataError,
    DprecError,
    InvalidParameterError,
    NotFittedError,
    PrivacyParameterError,
    UnknownDatasetError,
    UnknownNameError,
    check_int,
    check_positive,
    check_real,
)
from dprec.mechanisms.bitflip import BitFlip
from dprec.mechanisms.gaussian import Gaussian
from dprec.mechanisms.laplace_rr import LaplaceRR
from dprec.mechanisms.numeric import LaplaceMechanism, PiecewiseMechanism
from dprec.privacy.adjacency import as_adjacency
from dprec.privacy.posterior import posterior_sample_epsilon
from dprec.systems.params import check_epsilon, epsilon_grid, param_pairs, system_params
from dprec.systems.registry import make_config


@pytest.mark.parametrize("cls", [InvalidParameterError, PrivacyParameterError, UnknownNameError,
                                 DataError, UnknownDatasetError, NotFittedError])
def test_every_error_is_a_dprec_error_and_a_value_error(cls):
    assert issubclass(cls, DprecError) and issubclass(cls, ValueError)


def test_the_hierarchy_says_what_each_error_is():
    assert issubclass(PrivacyParameterError, InvalidParameterError)
    assert issubclass(UnknownDatasetError, DataError)
    assert issubclass(UnknownDatasetError, UnknownNameError)
    assert not issubclass(DataError, InvalidParameterError)


def _tiny() -> Dataset:
    return Dataset.from_triples("tiny", np.array([0, 1]), np.array([0, 1]), np.array([4.0, 2.0]))


@pytest.mark.parametrize("call, cls, message", [
    # the shared parameter checks
    (lambda: check_positive("lr", 0), InvalidParameterError, "lr must be > 0, got 0"),
    (lambda: check_int("k", 0, 1), InvalidParameterError, "k must be an integer >= 1, got 0"),
    (lambda: check_real("rho", -1.0, low=0.0, low_open=True), InvalidParameterError,
     "rho must be a finite number > 0, got -1.0"),
    # parameters as the command line and the services give them
    (lambda: check_epsilon(-1.0), PrivacyParameterError, "epsilon must be > 0, got -1.0"),
    (lambda: epsilon_grid("0.5,x"), InvalidParameterError,
     "--eps-grid must hold numbers, got 'x'"),
    (lambda: epsilon_grid("0.5,-1"), PrivacyParameterError, "every ε in --eps-grid must be > 0"),
    (lambda: param_pairs(["k"]), InvalidParameterError, "--param must look like KEY=VALUE"),
    (lambda: system_params("pnbm", 1.0, {}), InvalidParameterError,
     "pnbm is not private: it has no epsilon"),
    # systems' configs
    (lambda: make_config("dpps-pnbm", {"temperature": "-1"}), InvalidParameterError,
     "temperature must be a finite number > 0"),
    # data sets and their filters
    (lambda: load_dataset("no-such-data"), UnknownDatasetError,
     "unknown dataset 'no-such-data'; known: "),
    (lambda: min_interactions(_tiny(), min_user=-1), InvalidParameterError,
     "min_user must be an integer >= 0, got -1"),
    (lambda: binarise(_tiny(), float("nan")), InvalidParameterError,
     "threshold must be a finite number or None"),
    # mechanisms
    (lambda: BitFlip.symmetric(0.0), PrivacyParameterError, "epsilon must be > 0, got 0.0"),
    (lambda: BitFlip(0.2, 0.5), InvalidParameterError, "must satisfy 0 <= q < p <= 1"),
    (lambda: LaplaceMechanism(float("inf")), PrivacyParameterError, "epsilon must be finite"),
    (lambda: LaplaceMechanism(1.0, 2.0, 1.0), InvalidParameterError, "low must be < high"),
    (lambda: PiecewiseMechanism(-2.0), PrivacyParameterError, "epsilon must be > 0, got -2.0"),
    (lambda: LaplaceRR(1.0, 0.0), PrivacyParameterError, "eps2 must be > 0, got 0.0"),
    (lambda: Gaussian(0.0), InvalidParameterError, "noise_multiplier must be > 0, got 0.0"),
    # the neighbouring relation and the posterior-sampling rule
    (lambda: as_adjacency("replace_one"), InvalidParameterError,
     "adjacency must be an Adjacency (REPLACE_ONE, ADD_REMOVE_ONE, ZERO_OUT), got "
     "'replace_one'"),
    (lambda: posterior_sample_epsilon(0.0, 1.0), InvalidParameterError,
     "beta must be finite and > 0, got 0.0"),
])
def test_public_entry_points_raise_the_specific_type(call, cls, message):
    with pytest.raises(cls) as info:
        call()
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("value", [True, "x", None, [1.0]])
def test_as_float_refuses_what_is_not_a_number_with_the_given_error(value):
    from dprec.errors import as_float
    with pytest.raises(PrivacyParameterError, match="^eps refused$"):
        as_float(value, "eps refused", PrivacyParameterError)


def test_as_float_reads_numbers_and_refuses_non_finite_ones_only_when_asked():
    import math

    from dprec.errors import as_float
    assert as_float("2.5", "m") == 2.5 and as_float(np.float32(1.5), "m") == 1.5
    assert math.isinf(as_float("inf", "m"))
    with pytest.raises(InvalidParameterError, match="^m$"):
        as_float(float("nan"), "m", finite=True)
