"""One not-fitted error (issue 22, §5): every model and system used before ``fit`` raises
``dprec.errors.NotFittedError``, a DprecError whose message says to call fit first."""

from __future__ import annotations

import numpy as np
import pytest

from dprec import errors
from dprec.models.als import ImplicitALS
from dprec.models.bpr import BPRMF
from dprec.models.dp_mf import DPPSMF, DPSGDMF
from dprec.models.funk_svd import FunkSVD
from dprec.models.gmf import GMF
from dprec.models.knn_rating import ItemKNN
from dprec.models.pnbm import DPPSPNBM, DPSGDPNBM, PNBM
from dprec.systems import base

USERS, ITEMS = np.array([0]), np.array([0])
UNFITTED = {
    "ImplicitALS": lambda: ImplicitALS().score(USERS),
    "BPRMF": lambda: BPRMF().score(USERS),
    "GMF": lambda: GMF().item_factors,
    "FunkSVD": lambda: FunkSVD().predict(USERS, ITEMS),
    "ItemKNN": lambda: ItemKNN().predict(USERS, ITEMS),
    "DPSGDMF": lambda: DPSGDMF().predict(USERS, ITEMS),
    "DPPSMF": lambda: DPPSMF().predict(USERS, ITEMS),
    "PNBM": lambda: PNBM().predict(USERS, ITEMS),
    "DPSGDPNBM": lambda: DPSGDPNBM().predict(USERS, ITEMS),
    "DPPSPNBM": lambda: DPPSPNBM().predict(USERS, ITEMS),
}


def test_the_systems_error_is_the_one_in_errors():
    assert base.NotFittedError is errors.NotFittedError
    assert issubclass(errors.NotFittedError, errors.DprecError)


@pytest.mark.parametrize("name", sorted(UNFITTED))
def test_an_unfitted_model_raises_not_fitted_and_says_call_fit(name):
    with pytest.raises(errors.NotFittedError, match=r"not fitted; call fit\(\) first"):
        UNFITTED[name]()
