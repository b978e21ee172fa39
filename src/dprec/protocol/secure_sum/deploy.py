"""What every system on the secure sum deploys the same way (dp-pop, dpals, dp-fedavg):
the device-safe half of a secure-sum descriptor (:class:`SecureSumDeployment`), and the
sealing of simulated clients' uploads (:func:`sealed_uploads`) and of a device's proved
upload (:func:`proved_upload`).

- The server publishes its X25519 public key in its broadcast (artefact ``model``); the
  proxy publishes its own (``GET /v1/round``, ``published``). A client checks both (32
  bytes, distinct, not a low-order point) and uploads ONE
  :class:`~dprec.protocol.secure_sum.wire.SumUpload` per round: its mask seed sealed to the
  proxy and its share ``v - r mod q`` sealed to the server.
- The proxy (:class:`~dprec.protocol.secure_sum.relay.SecureSumRelay`) opens only the seeds,
  holds the uploads on disk, and at the close releases ONE shuffled
  :class:`~dprec.protocol.secure_sum.wire.SumRelease` once ``min_honest`` distinct senders
  uploaded.
- The server (:class:`~dprec.protocol.secure_sum.server_role.SecureSumRole`) opens that one
  batch, sums mod q, lifts, and publishes what its system makes of the sum.

Threat model: the server and the proxy do not collude; the guarantee holds while at least
``min_honest`` contributing clients are honest (docs/secure_sum.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from dprec.errors import DprecError
from dprec.protocol.deployment import Deployment, DeviceReader, ProxySecrets
from dprec.protocol.messages import HEADER, Message, MessageError
from dprec.protocol.secure_sum.checks import validity_terms
from dprec.protocol.secure_sum.client import SecureSumClient, check_public_key, clip, quantise
from dprec.protocol.secure_sum.device import (
    DeviceRound,
    device_share,
    truncated_share,
    upload,
)
from dprec.protocol.secure_sum.errors import SecureSumError
from dprec.protocol.secure_sum.messages import MESSAGE_ID_BYTES, MaskRelease, Upload, run_id
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
from dprec.protocol.secure_sum.wire import SumRelease, SumUpload

__all__ = ["SecureSumDeployment", "device_share", "proved_check_bytes", "proved_row",
           "proved_upload", "sealed_uploads", "truncated_share"]

_RELEASE_HEAD = 48  # "DSR2", round u64, count u32, proxy key (32)
_ROUND = slice(4, 12)  # the round id inside every secure-sum record (plain or proved)


class SecureSumDeployment(Deployment):
    """What every system on the secure sum deploys the same way (dp-pop, dpals): one
    :class:`SumUpload` per client per round, one :class:`SumRelease` per round made by the
    proxy's secure-sum part, secure aggregation only. A subclass gives ``name``,
    ``mechanism``, the parameters of the round a record names
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

    def validate(self, config: Any) -> None:
        if config.aggregation != "secure":
            raise DprecError(f"{self.label} runs as services with aggregation=secure only (a "
                             "trusted curator is not the untrusted server)")
        if config.n_clients is None:
            raise DprecError(f"a {self.label} server needs n_clients, the clients enrolled "
                             "(they fix each noise share and the modulus q): "
                             "--param n_clients=N")

    def upload(self, config: Any) -> type[Message]:
        return SumUpload

    def forward(self, config: Any) -> type[Message]:
        return SumRelease

    def upload_size(self, info: Any) -> int:
        """The largest round's upload: the proxy's body limit."""
        checks = self.checks(info.config, info.n_items)
        if checks is not None:
            return HEADER.size + max(ProvedUpload.size(c) for c in checks)
        return HEADER.size + max(Upload.size(p) for p in self.all_params(info))

    def batch_bytes(self, info: Any, senders: int) -> int:
        checks = self.checks(info.config, info.n_items)
        if checks is not None:  # the release (aggregate share and ids) or one check chunk
            return HEADER.size + max(max(ProvedRelease.size(c, senders),
                                         proved_check_bytes(c, senders)) for c in checks)

        def size(p: SecureSumParams) -> int:  # the release (mask sum and ids) or one chunk
            per_chunk = CHECK_CHUNK_BYTES // Upload.size(p) + 1
            item = MESSAGE_ID_BYTES + p.share_bytes + OVERHEAD
            return HEADER.size + max(MaskRelease.size(p, senders),
                                     _RELEASE_HEAD + min(int(senders), per_chunk) * item)
        return max(size(p) for p in self.all_params(info))

    def check_upload(self, message: Message, info: Any) -> None:
        assert isinstance(message, SumUpload)
        self._parse(info, message.data, Upload, ProvedUpload)

    def check_forwarded(self, message: Message, info: Any) -> None:
        assert isinstance(message, SumRelease)
        self._parse(info, message.data, MaskRelease, ProvedRelease)

    def _parse(self, info: Any, data: bytes, plain: Any, proved: Any) -> None:
        """``data`` parsed as a record of its round: ``plain`` with the round's parameters,
        or ``proved`` with its check (:class:`MessageError` saying what is wrong)."""
        try:
            check = self.record_check(info, data)
            if check is None:
                plain.from_bytes(data, self.round_params(info, data))
            else:
                proved.from_bytes(data, check)
        except SecureSumError as e:
            raise MessageError(str(e)) from None

    # -- validity=prio3: every upload is proved (protocol/secure_sum/proved.py) ------------

    def round_check(self, settings: Any, n_items: int, round: int
                    ) -> ContributionCheck | None:
        """Round ``round``'s Prio3 check (:mod:`.vdaf.contribution`), computed from the
        checked config alone; None: ``validity = none``."""
        return None

    def checks(self, settings: Any, n_items: int
               ) -> tuple[ContributionCheck, ...] | None:
        """Every round's check (None: ``validity = none``), computed once per (frozen,
        hashable) config."""
        return _checks(self, settings, int(n_items))

    def check_of_round(self, settings: Any, n_items: int, round: int
                       ) -> ContributionCheck | None:
        """Round ``round``'s check from :meth:`checks` (None: no proofs)."""
        checks = self.checks(settings, n_items)
        if checks is None:
            return None
        if not 0 <= round < len(checks):
            raise DprecError(f"{self.label} has rounds 0..{len(checks) - 1}, got round {round}")
        return checks[round]

    def record_check(self, info: Any, data: bytes) -> ContributionCheck | None:
        """The check of the round the secure-sum record ``data`` names (None: no proofs);
        :class:`MessageError` for a round the run does not have."""
        checks = self.checks(info.config, info.n_items)
        if checks is None:
            return None
        rid = int.from_bytes(bytes(data[_ROUND]), "big") if len(data) >= _ROUND.stop else -1
        if not 0 <= rid < len(checks):
            raise MessageError(f"the run has rounds 0..{len(checks) - 1}, the record names "
                               f"round {rid}: refused")
        return checks[rid]

    def relay_terms(self, info: Any) -> tuple[Any, int, int]:
        """(the parameters of every round, or the function ``round -> parameters``;
        ``min_honest``; ``n_clients``) of the proxy's part."""
        raise NotImplementedError

    def proxy_secrets(self, info: Any, state_dir: Path) -> ProxySecrets:
        """The proxy's part (its code, loaded lazily): the layer's
        :class:`~dprec.protocol.secure_sum.relay.SecureSumRelay`, or with proofs one
        :class:`~dprec.protocol.secure_sum.proved_relay.ProvedRelay` per distinct check."""
        from dprec.protocol.secure_sum.relay import SecureSumRelay
        from dprec.protocol.secure_sum.round_relays import proved_relay

        params, honest, n = self.relay_terms(info)
        checks = self.checks(info.config, info.n_items)
        if checks is None:
            return SecureSumRelay(params, state_dir, honest, n)
        return proved_relay(checks, params, state_dir, honest, n)

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

    def device_round(self, settings: Any, n_items: int, round: int
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

    def largest_model(self, settings: Any, n_items: int) -> int:
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
        honest = n if info.config.min_honest is None else read.integer(
            "min_honest", "max_min_honest")
        self.read_sizes(read)
        out: dict[str, Any] = dict(
            rounds=self.rounds(info.config), mechanism="skellam", epsilon=epsilon, count=1,
            artefact="model", artefact_exact=False, secure_sum=True, delta=delta,
            n_clients=n, min_honest=honest, settings=info.config,
            artefact_what=f"{self.label}'s broadcast (its key, then the model)")
        settings, d = out["settings"], int(info.n_items)
        try:
            sizes = tuple(HEADER.size + self.device_upload_bytes(settings, d, r)
                          for r in range(out["rounds"]))
            out["artefact_bytes"] = self.largest_model(settings, d)
        except (DprecError, KeyError, TypeError, ValueError) as e:
            raise DprecError(f"the protocol's config is not a usable {self.label} round: "
                             f"{e}") from None
        checks = self.checks(settings, d)
        if checks is not None:  # the run's whole delta: the truncation's cost included
            out["delta"] = float(delta) + sum(c.delta_cost(float(epsilon)) for c in checks)
        return {**out, "round_bytes": sizes, "message_bytes": max(sizes)}

    def device_upload_bytes(self, settings: Any, n_items: int, round: int
                            ) -> int:
        """Bytes of the device's upload of round ``round`` (without the message header)."""
        check = self.check_of_round(settings, n_items, round)
        if check is not None:
            return ProvedUpload.size(check)
        return Upload.size(self.device_round(settings, n_items, round).params)

    def build_mechanism(self, mechanism: str, epsilon: float | None) -> Any:
        """A secure sum has no local mechanism of its own: each round's shares are
        :meth:`device_round`'s (the policy charges the run's epsilon)."""
        return None

    def client_step(self, terms: Any, history: Any, round: int, rng: np.random.Generator,
                    client_id: int, artefact: Callable[[], Any]) -> bytes:
        """The device's upload of round ``round``: its vector (:meth:`device_vector`) on
        its own data, clipped, quantised, noised from ``rng`` and sealed to the broadcast's
        server key and the proxy's key (:func:`~dprec.protocol.secure_sum.device.upload`).
        With ``validity = prio3`` the noise share is truncated and the upload proved
        (:func:`proved_upload`), against the check computed here from the checked config
        (never a server's), once the proxy publishes that same check."""
        settings, d = terms.settings, int(terms.n_items)
        check = self.check_of_round(settings, d, round)
        if check is not None:
            self.check_published_validity(terms, settings, d)
        model = artefact()
        x = self.device_vector(terms, sp.csr_matrix(history), round, rng, model, client_id)
        rd = self.device_round(settings, d, round)
        if check is None:
            return SumUpload(upload(rd, terms.proxy_key, model.server_key, x, round,
                                    rng)).to_bytes()
        v = self.device_measurement(rd, x, rng)
        return proved_row(check, terms.proxy_key, model.server_key,
                          v + device_share(v, rng, rd.segments, check), round)

    def check_published_validity(self, terms: Any, settings: Any,
                                 n_items: int) -> None:
        """:class:`SecureSumError` unless the proxy publishes the checks this device
        computes from the config (its upload would not verify, or they are not the
        config's)."""
        mine = validity_terms(self.checks(settings, n_items) or ())
        theirs = dict(getattr(terms, "proxy_published", {}) or {}).get("validity")
        if theirs != mine:
            raise SecureSumError(f"the proxy publishes the validity check {theirs!r}, this "
                                 f"device computes {mine!r} from the config: refused (its "
                                 "upload would not verify, or the check is not the config's)")

    def device_measurement(self, round_: DeviceRound, x: np.ndarray,
                           rng: np.random.Generator) -> np.ndarray:
        """The integer vector ``v`` a proved upload adds its truncated share to: ``x``
        clipped and quantised with the round's parameters, the rounding drawn from ``rng``
        (:func:`~dprec.protocol.secure_sum.client.quantise`)."""
        p = round_.params
        return quantise(clip(np.asarray(x, dtype=np.float64), p.clip, p.norm), p.gamma,
                        p.gamma * p.clip, rng)

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
        else:  # the noisy vector meets the check but w.p. eta (noise_bounds): else refused
            yield int(uid), SumUpload(prove_and_seal(check, client.run, client.proxy_key,
                                                     client.server_key, v,
                                                     block.round)).to_bytes()


def proved_upload(check: ContributionCheck, proxy_key: bytes, server_key: bytes,
                  x: np.ndarray, round_id: int, rng: np.random.Generator,
                  segments: Sequence[tuple[int, float]] | None = None) -> bytes:
    """A device's proved :class:`SumUpload` of its integer vector ``x`` (keys checked: 32
    bytes, not low-order, distinct) plus its truncated noise share (:func:`truncated_share`)
    drawn from ``rng``."""
    v = np.asarray(x, dtype=np.int64)
    return proved_row(check, proxy_key, server_key,
                      v + truncated_share(check, v, rng, segments), round_id)


def proved_row(check: ContributionCheck, proxy_key: bytes, server_key: bytes,
               y: np.ndarray, round_id: int) -> bytes:
    """A proved :class:`SumUpload` of the already noised vector ``y`` (keys checked: 32
    bytes, not low-order, distinct); an honest ``y`` meets ``check``, another fails to
    prove."""
    run = _keys_checked(proxy_key, server_key)
    return SumUpload(prove_and_seal(check, run, proxy_key, server_key,
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


@lru_cache(maxsize=32)
def _checks(deployment: SecureSumDeployment, cfg: Any, n_items: int
            ) -> tuple[ContributionCheck, ...] | None:
    if cfg.validity == "none":
        return None
    checks = tuple(deployment.round_check(cfg, n_items, r) for r in range(deployment.rounds(cfg)))
    return None if any(c is None for c in checks) else checks  # type: ignore[return-value]
