"""The secure-sum half of a system's untrusted server role, written once for dp-pop, dpals
and dp-fedavg (:class:`SecureSumRole`): its X25519 key pair (from the OS CSPRNG; kept by the
store and restored after a restart), its verdicts on the proxy's share batch (with Prio3
proofs: its verifier shares, :mod:`.proved`), keeping each accepted share, and the sum of a
round's ONE release (the proxy's mask sum and the agreed ids) with the kept shares of those
ids, refused below ``min_honest`` clients (their shares would carry less noise than the
guarantee needs) and, for a release, before any kept share is read
(:class:`~dprec.protocol.secure_sum.server.SecureSumServer`). With ``aggregation=trusted``
the role holds a :class:`~dprec.protocol.secure_sum.curator.Curator` instead, which adds the
central noise to the in-process proxy's exact sum (:meth:`SecureSumRole.released_sum`). A
system keeps only what it does with the sum.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from dprec.errors import DprecError
from dprec.protocol.messages import MessageError
from dprec.protocol.secure_sum.curator import Curator
from dprec.protocol.secure_sum.errors import SecureSumError
from dprec.protocol.secure_sum.messages import MaskRelease, run_id
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.proved import (
    KeptOutputs,
    ProvedBatch,
    ProvedRelease,
    server_sum,
    server_verify,
)
from dprec.protocol.secure_sum.sealed import KeyPair
from dprec.protocol.secure_sum.server import SecureSumServer, check_shares
from dprec.protocol.secure_sum.validity import ProvedVerdicts
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck
from dprec.protocol.secure_sum.wire import ExactSum, SumRelease

__all__ = ["SecureSumRole"]


class SecureSumRole:
    """Mixin of a secure-sum server role. The role sets ``min_honest`` and gives the
    parameters (:meth:`round_params`) and, with ``validity=prio3``, the check
    (:meth:`round_check`) of each round; ``keys`` is None until :meth:`new_keys`."""

    label = "a secure-sum"
    """The system's name in errors (``"dp-pop's"``)."""
    min_honest: int
    keys: KeyPair | None = None
    batches = 0
    """Batches the last round brought (one, or none)."""
    contributors = 0
    """How many clients the last round summed."""
    curator: Curator | None = None
    """``aggregation=trusted``: the curator that noises each round's exact sum; None: the
    clients' shares are already in the sum (secure aggregation)."""
    kept_outputs: KeptOutputs | None = None
    """What this server kept of each upload it accepted at the share check, by message id
    (the opened ring share; with proofs, its output share): the service reads them from its
    store."""

    def round_params(self, round: int) -> SecureSumParams:
        """Round ``round``'s secure-sum parameters (:class:`DprecError` if it has none)."""
        raise NotImplementedError

    def round_check(self, round: int) -> ContributionCheck | None:
        """Round ``round``'s validity check (None: its uploads carry no proof)."""
        return None

    def new_keys(self) -> bytes:
        """A fresh key pair from the OS CSPRNG (never from the run's generator); its public
        key, which the broadcast carries."""
        self.keys = KeyPair()
        return self.keys.public

    def private_key(self) -> bytes:
        """The raw private key (what the server's store keeps to reopen after a restart)."""
        if self.keys is None:
            raise DprecError("start the server first")
        return self.keys.private_raw()

    def restore(self, private: bytes, model: Any) -> None:
        """The key (and, in a system that extends this, the model) a restarted server had
        published."""
        self.keys = KeyPair.from_raw(private)

    def _params(self, round: int) -> SecureSumParams:
        try:
            return self.round_params(round)
        except SecureSumError:
            raise
        except DprecError as e:
            raise SecureSumError(str(e)) from None

    def check_shares(self, data: bytes, round: int) -> dict[bytes, str | None]:
        """The verdict on each share of the proxy's share batch (nothing is summed); with
        proofs, also this server's verifier share of each report (the server is Prio3's
        Leader)."""
        check = self.round_check(round)
        if check is None:
            return check_shares(self._params(round), self.keys, data, round)
        if self.keys is None:
            raise DprecError("start the server first")
        try:
            batch = ProvedBatch.from_bytes(data, check)
            run = run_id(batch.proxy_key, self.keys.public)
            outputs: dict[bytes, bytes] = {}
            verdicts, shares = server_verify(check, self.keys, run, batch, round, outputs)
            return ProvedVerdicts(verdicts, shares, outputs)
        except SecureSumError as e:
            raise DprecError(str(e)) from None

    def one_batch(self, batches: Iterable[Any], round: int) -> Any | None:
        """The round's one batch (None: none came); more than one is refused (each batch
        would reveal its own sum)."""
        got = list(batches)
        self.batches = len(got)
        if not got:
            return None
        if len(got) > 1:
            raise DprecError(f"round {round} brought {len(got)} batches: a secure sum takes "
                             "one (each batch would reveal its own sum)")
        return got[0]

    def open_batch(self, batch: Any, round: int) -> tuple[np.ndarray, int]:
        """(the integer sum, how many clients it sums) of one batch: the in-process proxy's
        :class:`ExactSum`, or the service proxy's :class:`SumRelease`: its mask sum (or, with
        proofs, its aggregate share) plus this server's kept shares of exactly the uploads
        it names, counted against ``[min_honest, n_clients]`` first. Not yet checked
        against ``min_honest`` for an in-process sum: :meth:`refuse_below_min_honest`."""
        if isinstance(batch, ExactSum):
            return np.asarray(batch.total, np.int64), int(batch.contributors)
        if not isinstance(batch, SumRelease) or self.keys is None:
            raise DprecError(f"{self.label} server takes one SumRelease (with its key), got "
                             f"{type(batch).__name__}")
        check = self.round_check(round)
        try:
            if check is not None:
                return self._proved_sum(batch.data, check, round)
            if self.kept_outputs is None:
                raise DprecError("this server kept no shares of the round's uploads")
            params = self._params(round)
            release = MaskRelease.from_bytes(batch.data, params)
            result = SecureSumServer(params, self.keys).sum_kept(
                release, round, self.min_honest, params.expected_clients, self.kept_outputs)
        except SecureSumError as e:
            raise MessageError(f"the release is refused: {e}") from None
        return result.integer_sum, result.contributors

    def _proved_sum(self, data: bytes, check: ContributionCheck, round: int
                    ) -> tuple[np.ndarray, int]:
        """The integer sum of a proved release: the proxy's aggregate share plus this
        server's own kept output shares of exactly the reports it names."""
        assert self.keys is not None
        if self.kept_outputs is None:
            raise DprecError("this server kept no output shares of the round's reports")
        release = ProvedRelease.from_bytes(data, check)
        if release.proxy_key == self.keys.public:
            raise SecureSumError("the release names this server's own key as the proxy's")
        return server_sum(check, release, round, self.min_honest,
                          self._params(round).expected_clients, self.kept_outputs)

    def start_curator(self, rng: np.random.Generator) -> None:
        """With a :attr:`curator`, its generator (:meth:`Curator.start`; call it in the
        role's start, after the system's own draws from ``rng``)."""
        if self.curator is not None:
            self.curator.start(rng)

    def released_sum(self, batches: Iterable[Any], round: int, length: int
                     ) -> np.ndarray | None:
        """The round's released sum (None: no batch came): its one batch opened
        (:meth:`open_batch`), refused below ``min_honest`` clients, its first ``length``
        coordinates (beyond them only a sharded run's zero padding), plus the
        :attr:`curator`'s draws when there is one; sets :attr:`contributors`."""
        batch = self.one_batch(batches, round)
        if batch is None:
            return None
        total, contributors = self.open_batch(batch, round)
        self.refuse_below_min_honest(contributors, round)
        if total.shape[0] < length or total[length:].any():
            raise DprecError(f"round {round}'s sum must have {length} coordinates, got "
                             f"{total.shape[0]}")
        self.contributors = contributors
        total = total[:length]
        return total if self.curator is None else self.curator.noisy(total, round)

    def refuse_below_min_honest(self, contributors: int, round: int) -> None:
        """:class:`DprecError` if the round sums fewer than ``min_honest`` clients (its noise
        is below the guarantee)."""
        if contributors < self.min_honest:
            raise DprecError(f"round {round} sums {contributors} clients, fewer than "
                             f"min_honest = {self.min_honest}: its noise is below the "
                             "guarantee; refused")
