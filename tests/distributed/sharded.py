"""Helpers of the sharded-backend tests (imported by module name, like tests/services/svc)."""

import numpy as np

from dprec.mechanisms.numeric import BinaryMechanism
from dprec.privacy.events import EventLog
from dprec.protocol.engine import ShufflingProxy, run_protocol
from dprec.systems.fmf.client import FederatedClients
from dprec.systems.fmf.server import FactorServer


def broadcast_of(model: object) -> np.ndarray:
    """What a fitted DPLCF (similarities) or FMF-LDP (V) model broadcasts."""
    b = getattr(model, "broadcast", None)
    return b.sims if b is not None and hasattr(b, "sims") else model.V  # type: ignore[attr-defined]


def fmf_round_parts(train, k=3):
    """FMF-LDP's clients and server, built as ``FederatedMF.fit`` builds them."""
    mech = BinaryMechanism(2.5)
    clients = FederatedClients(train, factors=3, alpha=1.0, reg=1e-6, k=k, clip=1.0,
                               exact=False, mechanism=mech, ledger=None, batch_size=8192)
    return clients, FactorServer(train.shape[1], 3, 1e-3, 1e-6, 2, 1.0, 0.1, mech)


def batched_log(train, backend, batch_senders):
    """The event log of 2 rounds through a proxy forwarding batches of ``batch_senders``."""
    clients, server = fmf_round_parts(train)
    log = EventLog(train.shape[0])
    run_protocol(server, clients, 2, np.random.default_rng(5), log,
                 proxy=ShufflingProxy(100, batch_senders=batch_senders), transport=backend)
    return log

