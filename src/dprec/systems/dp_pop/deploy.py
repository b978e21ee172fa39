"""dp-pop (aggregation=secure) as services, the device-safe half: one round of the
cryptographic secure sum (:mod:`dprec.protocol.secure_sum`) through the shuffling proxy.

- The server publishes its X25519 public key (artefact ``model`` before the round); the
  proxy publishes its own (``GET /v1/round``, ``published``). A client checks both (32
  bytes, distinct, not a low-order point) and uploads ONE :class:`SumUpload` per round:
  its mask seed sealed to the proxy and its share ``v - r mod q`` sealed to the server.
- The proxy opens only the seeds (refusing a seed box it cannot open, another round's, a
  replayed message id, a second upload of a sender, a malformed or oversized one), holds
  the uploads on disk, and at the close releases ONE shuffled :class:`SumRelease` (the
  server shares and the sum of the masks, recomputed from the held uploads) once
  ``min_honest`` distinct senders uploaded (:class:`~dprec.systems.dp_pop.proxy.SecureSumRelay`).
- The server takes that one batch, opens, sums mod q, lifts, and publishes the noisy counts
  (:mod:`dprec.systems.dp_pop.serve`).

Threat model: the server and the proxy do not collude; the guarantee holds while at least
``min_honest`` contributing clients are honest (docs/secure_sum.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.mechanisms.skellam import SkellamMechanism
from dprec.protocol.deployment import Deployment, DeviceReader, ProxySecrets
from dprec.protocol.messages import HEADER, Message, MessageError
from dprec.protocol.secure_sum.client import SecureSumClient, check_public_key
from dprec.protocol.secure_sum.device import DeviceRound, upload
from dprec.protocol.secure_sum.errors import SecureSumError
from dprec.protocol.secure_sum.messages import MESSAGE_ID_BYTES, Release, Upload, run_id
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.proved import (
    ProvedBatch,
    ProvedRelease,
    ProvedUpload,
    prove_and_seal,
)
from dprec.protocol.secure_sum.sealed import OVERHEAD
from dprec.protocol.secure_sum.validity import CHECK_CHUNK_BYTES
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.systems.dp_pop.calibration import (
    RoundCalibration,
    calibrate,
    check_terms,
    contribution_check,
)
from dprec.systems.dp_pop.draws import device_vector
from dprec.systems.dp_pop.messages import NoisyVectors, PopularityModel, SumRelease, SumUpload

__all__ = ["DEPLOYMENT", "PopDeployment", "SecureSumDeployment", "check_of", "own_items",
           "proved_check_bytes", "proved_upload", "round_of", "sealed_uploads"]

_RELEASE_HEAD = 48  # "DSR2", round u64, count u32, proxy key (32)


def round_of(info: Any) -> RoundCalibration:
    """The public numbers of ``info``'s round (its config, items and enrolled clients);
    computed once per description (the proxy asks for every upload)."""
    return _round(json.dumps(info.config, sort_keys=True), int(info.n_items))


@lru_cache(maxsize=16)
def _round(config: str, n_items: int) -> RoundCalibration:
    cfg = json.loads(config)
    return calibrate(cfg, n_items, int(cfg["n_clients"]))


def _params(info: Any) -> SecureSumParams:
    return round_of(info).params


def check_of(info: Any) -> ContributionCheck | None:
    """``info``'s validity check (None: ``validity = none``), computed once per config."""
    return _check(json.dumps(info.config, sort_keys=True), int(info.n_items))


@lru_cache(maxsize=16)
def _check(config: str, n_items: int) -> ContributionCheck | None:
    cfg = json.loads(config)
    return contribution_check(cfg, n_items, int(cfg["n_clients"]))


class SecureSumDeployment(Deployment):
    """What every system on the secure sum deploys the same way (dp-pop, dpals): one
    :class:`SumUpload` per client per round, one :class:`SumRelease` per round made by the
    proxy's secure-sum part, secure aggregation only. A subclass gives ``name``,
    ``accepts``, ``mechanism``, the parameters of the round a record names
    (:meth:`round_params`), all rounds' parameters (:meth:`all_params`), its proxy part, the
    type of its simulated client blocks and, for the device, its rounds' parameters and
    noise segments (:meth:`device_round`), its vector (:meth:`device_vector`), its model
    (:meth:`model_type`, :meth:`check_model`, :meth:`largest_model`) and its scores; the
    device's terms, step and artefact decoding are written here once."""

    noisy = ("skellam",)
    default_mechanisms = frozenset({"skellam"})
    artefacts = ("model",)
    broadcast_artefact = "model"
    one_batch = True
    device_randomness = True
    label = "a secure-sum system"
    """The system's name in messages."""
    block_type: type = object
    """The simulated clients' block (ids, vectors, round, keys, params)."""

    def round_params(self, info: Any, data: bytes) -> SecureSumParams:
        """The parameters of the round the secure-sum record ``data`` belongs to."""
        raise NotImplementedError

    def all_params(self, info: Any) -> list[SecureSumParams]:
        """The parameters of every round of the run."""
        raise NotImplementedError

    def validate(self, config: Mapping[str, Any]) -> None:
        if config.get("aggregation") != "secure":
            raise DprecError(f"{self.label} runs as services with aggregation=secure only (a "
                             "trusted curator is not the untrusted server)")
        if config.get("n_clients") is None:
            raise DprecError(f"a {self.label} server needs n_clients, the clients enrolled "
                             "(they fix each noise share and the modulus q): "
                             "--param n_clients=N")

    def upload(self, config: Mapping[str, Any]) -> type[Message]:
        return SumUpload

    def forward(self, config: Mapping[str, Any]) -> type[Message]:
        return SumRelease

    def upload_size(self, info: Any) -> int:
        """The largest round's upload: the proxy's body limit."""
        return HEADER.size + max(Upload.size(p) for p in self.all_params(info))

    def batch_bytes(self, info: Any, senders: int) -> int:
        def size(p: SecureSumParams) -> int:
            item = MESSAGE_ID_BYTES + p.share_bytes + OVERHEAD
            return HEADER.size + _RELEASE_HEAD + 8 * p.dimension + senders * item
        return max(size(p) for p in self.all_params(info))

    def check_upload(self, message: Message, info: Any) -> None:
        assert isinstance(message, SumUpload)
        try:
            Upload.from_bytes(message.data, self.round_params(info, message.data))
        except SecureSumError as e:
            raise MessageError(str(e)) from None

    def check_forwarded(self, message: Message, info: Any) -> None:
        assert isinstance(message, SumRelease)
        try:
            Release.from_bytes(message.data, self.round_params(info, message.data))
        except SecureSumError as e:
            raise MessageError(str(e)) from None

    def shuffle(self, rows: list[bytes], info: Any, rng: np.random.Generator,
                threshold: int) -> bytes:
        raise DprecError(f"a {self.label} round is released by the proxy's secure-sum part "
                         "(its key opens the mask seeds): proxy_secrets(...).release")

    def unique_id(self, message: Message) -> bytes | None:
        assert isinstance(message, SumUpload)
        return message.message_id

    def client_messages(self, message: Any, first_id: int) -> Iterator[tuple[int, bytes]]:
        """Each simulated client's sealed upload of its noisy vector (its own id)."""
        if not isinstance(message, self.block_type):
            raise DprecError(f"{type(message).__name__} is not a block of {self.label} "
                             "clients")
        yield from sealed_uploads(message)

    # -- the device (protocol/secure_sum/device.py; a subclass gives its vector) -----------

    def device_round(self, settings: Mapping[str, Any], n_items: int, round: int
                     ) -> DeviceRound:
        """Round ``round``'s parameters and noise segments, from the checked config."""
        raise NotImplementedError

    def device_vector(self, terms: Any, history: sp.csr_matrix, round: int,
                      rng: np.random.Generator, model: Any, client_id: int) -> np.ndarray:
        """The client's vector of round ``round`` before clip, quantisation and noise."""
        raise NotImplementedError

    def model_type(self) -> type[Message]:
        """The broadcast's message type (artefact ``model``)."""
        raise NotImplementedError

    def largest_model(self, settings: Mapping[str, Any], n_items: int) -> int:
        """Bytes of the largest broadcast the run publishes."""
        raise NotImplementedError

    def check_model(self, terms: Any, model: Any) -> None:
        """:class:`DprecError` for a broadcast a client of ``terms`` cannot use."""

    def read_sizes(self, read: DeviceReader) -> None:
        """Read the config's sizes the policy bounds (a subclass's factors)."""

    def terms(self, read: DeviceReader, info: Any) -> dict[str, Any]:
        """The device's terms: epsilon, delta, ``n_clients`` and ``min_honest`` within the
        policy, and every round's parameters computed here from the config (never the
        server's numbers)."""
        epsilon = read.real("epsilon", positive=True)
        delta = read.real("delta", positive=True)
        n = read.integer("n_clients", "max_clients")
        honest = n if info.config.get("min_honest") is None else read.integer(
            "min_honest", "max_min_honest")
        self.read_sizes(read)
        out: dict[str, Any] = dict(
            rounds=self.rounds(info.config), mechanism="skellam", epsilon=epsilon, count=1,
            artefact="model", artefact_exact=False, secure_sum=True, delta=delta,
            n_clients=n, min_honest=honest, settings=MappingProxyType(dict(info.config)),
            artefact_what=f"{self.label}'s broadcast (its key, then the model)")
        settings, d = out["settings"], int(info.n_items)
        try:
            sizes = tuple(HEADER.size + self.device_upload_bytes(settings, d, r)
                          for r in range(out["rounds"]))
            out["artefact_bytes"] = self.largest_model(settings, d)
        except (DprecError, KeyError, TypeError, ValueError) as e:
            raise DprecError(f"the protocol's config is not a usable {self.label} round: "
                             f"{e}") from None
        return {**out, "round_bytes": sizes, "message_bytes": max(sizes)}

    def device_upload_bytes(self, settings: Mapping[str, Any], n_items: int, round: int
                            ) -> int:
        """Bytes of the device's upload of round ``round`` (without the message header)."""
        return Upload.size(self.device_round(settings, n_items, round).params)

    def build_mechanism(self, mechanism: str, epsilon: float | None) -> Any:
        """A secure sum has no local mechanism of its own: each round's shares are
        :meth:`device_round`'s (the policy charges the run's epsilon)."""
        return None

    def client_step(self, terms: Any, history: Any, round: int, rng: np.random.Generator,
                    client_id: int, artefact: Callable[[], Any]) -> bytes:
        """The device's upload of round ``round``: its vector (:meth:`device_vector`) on
        its own data, clipped, quantised, noised from ``rng`` and sealed to the broadcast's
        server key and the proxy's key (:func:`~dprec.protocol.secure_sum.device.upload`)."""
        model = artefact()
        x = self.device_vector(terms, sp.csr_matrix(history), round, rng, model, client_id)
        body = upload(self.device_round(terms.settings, terms.n_items, round),
                      terms.proxy_key, model.server_key, x, round, rng)
        return SumUpload(body).to_bytes()

    def decode_artefact(self, terms: Any, body: bytes) -> Any:
        """The broadcast, parsed and checked (:meth:`check_model`); :class:`DprecError`
        naming what is wrong (the device reports it as a bad reply)."""
        try:
            model = Message.from_bytes(body)
            if not isinstance(model, self.model_type()):
                raise DprecError(f"expected a {self.model_type().__name__}, got "
                                 f"{type(model).__name__}")
            self.check_model(terms, model)
        except (DprecError, MessageError) as e:
            raise DprecError(f"{self.label}'s model artefact: {e}") from None
        return model

    def scores(self, terms: Any, history: Any, artefact: Any) -> np.ndarray:
        raise DprecError(f"{self.label} ranks on the device from its published model; "
                         "this system has no on-device scores")


class PopDeployment(SecureSumDeployment):
    """dp-pop with ``aggregation = secure``."""

    name = "dp_pop"
    label = "dp-pop"
    block_type = NoisyVectors

    def mechanism(self, config: Mapping[str, Any]) -> SkellamMechanism:
        """Each client's noise share ``Sk(mu / min_honest)``, for k at most the item count
        (:func:`round_of` caps k at the item count)."""
        n = int(config["n_clients"])
        return calibrate(config, max(int(config["k"]), 1), n).share

    def round_params(self, info: Any, data: bytes) -> SecureSumParams:
        return _params(info)

    def all_params(self, info: Any) -> list[SecureSumParams]:
        return [_params(info)]

    def proxy_secrets(self, info: Any, state_dir: Path) -> ProxySecrets:
        from dprec.systems.dp_pop.proved_relay import ProvedRelay  # the proxy's code, lazily
        from dprec.systems.dp_pop.proxy import SecureSumRelay

        cal, check = round_of(info), check_of(info)
        key_of = _server_key_of
        if check is not None:
            return ProvedRelay(check, cal.params, state_dir, cal.min_honest, cal.n_clients,
                               key_of)
        return SecureSumRelay(cal.params, state_dir, cal.min_honest, cal.n_clients, key_of)

    # -- with validity=prio3 every upload is a proved one (protocol/secure_sum/proved.py) ---

    def terms(self, read: DeviceReader, info: Any) -> dict[str, Any]:
        """As every secure sum's, but with ``validity = prio3`` the delta the device
        checks against its policy's ``max_delta`` is the run's whole delta: the config's
        plus the truncation's ``(1 + e^epsilon) n (eta + eta_2)``
        (:meth:`~dprec.protocol.secure_sum.vdaf.contribution.ContributionCheck.delta_cost`),
        computed here from the config."""
        out = super().terms(read, info)
        check = _check(json.dumps(dict(out["settings"]), sort_keys=True), int(info.n_items))
        if check is not None:
            out["delta"] = float(out["delta"]) + check.delta_cost(float(out["epsilon"]))
        return out

    def upload_size(self, info: Any) -> int:
        check = check_of(info)
        return super().upload_size(info) if check is None else \
            HEADER.size + ProvedUpload.size(check)

    def batch_bytes(self, info: Any, senders: int) -> int:
        check = check_of(info)
        if check is None:
            return super().batch_bytes(info, senders)
        return HEADER.size + max(ProvedRelease.size(check, senders),
                                 proved_check_bytes(check, senders))

    def check_upload(self, message: Message, info: Any) -> None:
        check = check_of(info)
        if check is None:
            return super().check_upload(message, info)
        assert isinstance(message, SumUpload)
        try:
            ProvedUpload.from_bytes(message.data, check)
        except SecureSumError as e:
            raise MessageError(str(e)) from None

    def check_forwarded(self, message: Message, info: Any) -> None:
        check = check_of(info)
        if check is None:
            return super().check_forwarded(message, info)
        assert isinstance(message, SumRelease)
        try:
            ProvedRelease.from_bytes(message.data, check)
        except SecureSumError as e:
            raise MessageError(str(e)) from None

    def device_upload_bytes(self, settings: Mapping[str, Any], n_items: int, round: int
                            ) -> int:
        check = _check(json.dumps(dict(settings), sort_keys=True), int(n_items))
        return super().device_upload_bytes(settings, n_items, round) if check is None \
            else ProvedUpload.size(check)

    def client_step(self, terms: Any, history: Any, round: int, rng: np.random.Generator,
                    client_id: int, artefact: Callable[[], Any]) -> bytes:
        """With ``validity = prio3``: the device's noisy row ``y = v + z`` drawn as every
        simulated client draws it (:func:`~dprec.systems.dp_pop.draws.device_vector`: its
        share, then k of its items, again until the share meets the check's truncation),
        proved and sealed (:func:`~dprec.protocol.secure_sum.proved.prove_and_seal`). The
        check is computed here from the checked config, never taken from a server."""
        settings, d = terms.settings, int(terms.n_items)
        check = _check(json.dumps(dict(settings), sort_keys=True), d)
        if check is None:
            return super().client_step(terms, history, round, rng, client_id, artefact)
        if round != 0:
            raise DprecError(f"dp-pop has one round, got round {round}")
        mine = {"kind": "prio3", **check_terms(check)}
        theirs = dict(getattr(terms, "proxy_published", {}) or {}).get("validity")
        if theirs != mine:
            raise SecureSumError(f"the proxy publishes the validity check {theirs!r}, this "
                                 f"device computes {mine!r} from the config: refused (its "
                                 "upload would not verify, or the check is not the config's)")
        model = artefact()
        k, sampling = int(settings["k"]), settings["sampling"]
        share = _round(json.dumps(dict(settings), sort_keys=True), d).share
        y = device_vector(own_items(sp.csr_matrix(history), k, sampling), d, k, sampling,
                          share, rng, check)
        return proved_upload(check, terms.proxy_key, model.server_key, y, round)

    # -- the device: a k-hot row, one segment Sk(mu / min_honest) ---------------------------

    def device_round(self, settings: Mapping[str, Any], n_items: int, round: int
                     ) -> DeviceRound:
        if round != 0:
            raise DprecError(f"dp-pop has one round, got round {round}")
        cal = _round(json.dumps(dict(settings), sort_keys=True), int(n_items))
        return DeviceRound(cal.params, ((int(n_items), cal.share.mu),))

    def model_type(self) -> type[Message]:
        return PopularityModel

    def largest_model(self, settings: Mapping[str, Any], n_items: int) -> int:
        return PopularityModel(bytes(32), np.zeros(int(n_items), np.int64)).nbytes

    def check_model(self, terms: Any, model: Any) -> None:
        if model.counts.size not in (0, terms.n_items):
            raise DprecError(f"the model must hold no counts (before the round) or "
                             f"{terms.n_items}, got {model.counts.size}")

    def device_vector(self, terms: Any, history: sp.csr_matrix, round: int,
                      rng: np.random.Generator, model: Any, client_id: int) -> np.ndarray:
        """The k-hot row of the device's items: k of them uniformly from ``rng``, or
        (``sampling=recency``) the k with the largest values of ``history`` (the device's
        interaction times), ties by the smaller item id (:func:`own_items`)."""
        k = int(terms.settings["k"])
        items = own_items(history, k, terms.settings["sampling"])
        if items.size > k:
            items = rng.choice(items, k, replace=False)
        out = np.zeros(terms.n_items)
        out[items] = 1.0
        return out

    def scores(self, terms: Any, history: Any, artefact: Any) -> np.ndarray:
        """The published noisy counts (popularity: the same for every user)."""
        if artefact.counts.size != terms.n_items:
            raise DprecError("dp-pop has published no counts yet (its round is open)")
        return artefact.counts.astype(np.float64)


def sealed_uploads(block: Any) -> Iterator[tuple[int, bytes]]:
    """(client id, :class:`SumUpload` bytes) of every client of ``block`` (its ``vectors``:
    an array, or a callable giving one), sealed to the block's proxy and server keys
    (checked first: what a client receives is hostile)."""
    if block.proxy_key is None:
        raise DprecError("the proxy published no secure-sum key: a client has nothing to "
                         "seal its mask seed to")
    client = SecureSumClient(block.params, block.proxy_key, block.server_key)
    vectors = block.vectors() if callable(block.vectors) else block.vectors
    check = getattr(block, "check", None)
    for uid, v in zip(block.ids, vectors, strict=True):
        if check is None:
            yield int(uid), SumUpload(client.seal(v, block.round)).to_bytes()
        else:  # drawn as a device draws (draws.device_vector), proved as it proves
            yield int(uid), SumUpload(prove_and_seal(check, client.run, client.proxy_key,
                                                     client.server_key, v,
                                                     block.round)).to_bytes()


def own_items(history: sp.csr_matrix, k: int, sampling: str) -> np.ndarray:
    """The device's items (``history``'s columns): all of them, or with ``sampling=recency``
    and more than ``k``, the ``k`` with the largest values (its interaction times), ties by
    the smaller item id."""
    items, values = history.indices.astype(np.int64), history.data
    if sampling == "recency" and items.size > k:
        items = items[np.lexsort((items, -values))[:k]]
    return items


def proved_upload(check: ContributionCheck, proxy_key: bytes, server_key: bytes,
                  y: np.ndarray, round_id: int) -> bytes:
    """A device's proved :class:`SumUpload` of its noisy row ``y`` (keys checked: 32 bytes,
    not low-order, distinct); an honest ``y`` meets ``check``
    (:func:`~dprec.systems.dp_pop.draws.device_vector`), another fails to prove."""
    client = _keys_checked(proxy_key, server_key)
    return SumUpload(prove_and_seal(check, client, proxy_key, server_key,
                                    np.asarray(y, dtype=np.int64), round_id)).to_bytes()


def proved_check_bytes(check: ContributionCheck, senders: int) -> int:
    """The largest share-check batch of a round of ``senders`` proved uploads: the proxy
    checks them in chunks of about :data:`CHECK_CHUNK_BYTES` of uploads, plus one."""
    per_chunk = CHECK_CHUNK_BYTES // ProvedUpload.size(check) + 1
    return _RELEASE_HEAD + OVERHEAD + 32 + min(int(senders), per_chunk) * sum(
        ProvedBatch.item_sizes(check))


def _keys_checked(proxy_key: bytes, server_key: bytes) -> bytes:
    """The run id of two checked keys (:func:`check_public_key`, distinct)."""
    proxy_key = check_public_key(proxy_key, "proxy")
    server_key = check_public_key(server_key, "server")
    if proxy_key == server_key:
        raise SecureSumError("the proxy and the server must hold different keys: with one "
                             "key, one party could open both shares")
    return run_id(proxy_key, server_key)


def _server_key_of(body: bytes) -> bytes:
    return PopularityModel.from_bytes(body).server_key


DEPLOYMENT = PopDeployment()
