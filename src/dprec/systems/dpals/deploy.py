"""dpals (aggregation=secure) as services, the device-safe half: every round is one
cryptographic secure sum (:mod:`dprec.protocol.secure_sum`) through the shuffling proxy,
as for dp-pop (:mod:`dprec.systems.dp_pop.deploy`), over several rounds:

- the optional DP count round, then one round per ALS step (:mod:`dprec.systems.dpals.plan`);
  each client uploads ONE :class:`~dprec.systems.dp_pop.messages.SumUpload` per round: its
  noisy integer vector of the round (count sample, or per-item statistics dense over all
  items and the global Gramian term), split into a mask seed sealed to the proxy and a
  share sealed to the server; the round id is bound into both boxes;
- the proxy (:class:`~dprec.systems.dpals.proxy.DpalsRelay`) opens only the seeds and at
  the close releases ONE shuffled batch once ``min_honest`` distinct senders uploaded;
- the server opens and sums it mod q, solves (:mod:`dprec.systems.dpals.serve`) and
  broadcasts the DP counts or the new item factors, which every client checks (shape,
  finite) before it solves its own vector from them.

Threat model: the server and the proxy do not collude; the guarantee holds while at least
``min_honest`` contributing clients are honest (docs/secure_sum.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.deployment import Deployment, DeviceReader, ProxySecrets
from dprec.protocol.messages import HEADER, Message, MessageError
from dprec.protocol.secure_sum.client import SecureSumClient
from dprec.protocol.secure_sum.errors import SecureSumError
from dprec.protocol.secure_sum.messages import MESSAGE_ID_BYTES, Release, Upload
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.sealed import OVERHEAD
from dprec.systems.dp_pop.messages import SumRelease, SumUpload
from dprec.systems.dpals.messages import ClientBlock
from dprec.systems.dpals.plan import RunPlan, plan_of

__all__ = ["DEPLOYMENT", "DpalsDeployment", "sealed_uploads"]

_RELEASE_HEAD = 16  # "DSR1", round u64, count u32
_ROUND = slice(4, 12)  # the round id inside a secure-sum upload or release


def _plan(info: Any) -> RunPlan:
    return plan_of(info.config, int(info.n_items))


def _round_params(info: Any, data: bytes) -> SecureSumParams:
    """The parameters of the round a secure-sum record names (MessageError if none)."""
    plan = _plan(info)
    rid = int.from_bytes(bytes(data[_ROUND]), "big") if len(data) >= 12 else -1
    if not 0 <= rid < len(plan.rounds):
        raise MessageError(f"a dpals run has rounds 0..{len(plan.rounds) - 1}, the record "
                           f"names round {rid}: refused")
    return plan.rounds[rid].params


class DpalsDeployment(Deployment):
    """dpals with ``aggregation = secure``."""

    name = "dpals"
    package = "dprec.systems.dpals"
    noisy = ("skellam",)
    default_mechanisms = frozenset({"skellam"})
    artefacts = ("model",)
    broadcast_artefact = "model"
    one_batch = True

    def accepts(self, config: Mapping[str, Any]) -> bool:
        return "unobserved_weight" in config and "weighting" in config

    def validate(self, config: Mapping[str, Any]) -> None:
        if config.get("aggregation") != "secure":
            raise DprecError("dpals runs as services with aggregation=secure only (a trusted "
                             "curator is not the untrusted server)")
        if config.get("n_clients") is None:
            raise DprecError("a dpals server needs n_clients, the clients enrolled (they fix "
                             "each noise share and the modulus q): --param n_clients=N")

    def rounds(self, config: Mapping[str, Any]) -> int:
        steps = config.get("steps")
        eps = float(config["epsilon"])
        n = int(steps) if steps is not None else 3 if eps <= 1 else 4 if eps <= 5 else 5
        return n + (config["weighting"] != "uniform")

    def n_factors(self, config: Mapping[str, Any]) -> int | None:
        return int(config["factors"])

    def upload(self, config: Mapping[str, Any]) -> type[Message]:
        return SumUpload

    def forward(self, config: Mapping[str, Any]) -> type[Message]:
        return SumRelease

    def mechanism(self, config: Mapping[str, Any]) -> None:
        """None: no single local mechanism; each release of each round has its own share
        ``Sk(mu_r / min_honest)``, which the plan of the description gives
        (:func:`~dprec.systems.dpals.plan.plan_of`)."""
        return None

    def upload_size(self, info: Any) -> int:
        """The largest round's upload: the proxy's body limit."""
        return HEADER.size + max(Upload.size(r.params) for r in _plan(info).rounds)

    def batch_bytes(self, info: Any, senders: int) -> int:
        def size(p: SecureSumParams) -> int:
            item = MESSAGE_ID_BYTES + p.share_bytes + OVERHEAD
            return HEADER.size + _RELEASE_HEAD + 8 * p.dimension + senders * item
        return max(size(r.params) for r in _plan(info).rounds)

    def check_upload(self, message: Message, info: Any) -> None:
        assert isinstance(message, SumUpload)
        try:
            Upload.from_bytes(message.data, _round_params(info, message.data))
        except SecureSumError as e:
            raise MessageError(str(e)) from None

    def check_forwarded(self, message: Message, info: Any) -> None:
        assert isinstance(message, SumRelease)
        try:
            Release.from_bytes(message.data, _round_params(info, message.data))
        except SecureSumError as e:
            raise MessageError(str(e)) from None

    def shuffle(self, rows: list[bytes], info: Any, rng: np.random.Generator,
                threshold: int) -> bytes:
        raise DprecError("a dpals round is released by the proxy's secure-sum part (its key "
                         "opens the mask seeds): proxy_secrets(...).release")

    def unique_id(self, message: Message) -> bytes | None:
        assert isinstance(message, SumUpload)
        return message.message_id

    def proxy_secrets(self, info: Any, state_dir: Path) -> ProxySecrets:
        from dprec.systems.dpals.proxy import DpalsRelay  # the proxy's code, lazily

        return DpalsRelay(_plan(info), state_dir)

    def client_messages(self, message: Any, first_id: int) -> Iterator[tuple[int, bytes]]:
        """Each simulated client's sealed upload of its noisy vector (its own id)."""
        if not isinstance(message, ClientBlock):
            raise DprecError(f"{type(message).__name__} is not a block of dpals clients")
        yield from sealed_uploads(message)

    # -- the device -------------------------------------------------------------------------

    def terms(self, read: DeviceReader, info: Any) -> dict[str, Any]:
        raise DprecError("dpals has no device client yet: a device would need the proxy's "
                         "key in its policy")

    def build_mechanism(self, mechanism: str, epsilon: float | None) -> Any:
        raise DprecError("dpals has no device client yet")

    def client_step(self, terms: Any, history: Any, round: int, rng: np.random.Generator,
                    client_id: int, artefact: Callable[[], Any]) -> bytes:
        raise DprecError("dpals has no device client yet")

    def decode_artefact(self, terms: Any, body: bytes) -> Any:
        raise DprecError("dpals has no device client yet")

    def scores(self, terms: Any, history: Any, artefact: Any) -> np.ndarray:
        raise DprecError("dpals has no device client yet")


def sealed_uploads(block: ClientBlock) -> Iterator[tuple[int, bytes]]:
    """(client id, :class:`SumUpload` bytes) of every client of ``block``, sealed to the
    block's proxy and server keys (checked first: what a client receives is hostile)."""
    if block.proxy_key is None:
        raise DprecError("the proxy published no secure-sum key: a client has nothing to "
                         "seal its mask seed to")
    client = SecureSumClient(block.params, block.proxy_key, block.server_key)
    for uid, v in zip(block.ids, block.vectors(), strict=True):
        yield int(uid), SumUpload(client.seal(v, block.round)).to_bytes()


DEPLOYMENT = DpalsDeployment()
