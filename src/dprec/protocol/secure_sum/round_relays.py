"""The service proxy's part of a proved secure sum whose rounds have different checks
(dpals: the count round's vector and the ALS rounds' statistics differ in length and range):
one :class:`~dprec.protocol.secure_sum.proved_relay.ProvedRelay` per distinct check, every
call for round ``r`` handed to round ``r``'s, and one published ``validity``
(:func:`~dprec.protocol.secure_sum.checks.validity_terms`) that lists each round's terms.
All of them hold the one proxy key of the state folder (:func:`.relay.proxy_keys`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dprec.protocol.deployment import ProxySecrets
from dprec.protocol.messages import Message, MessageError
from dprec.protocol.secure_sum.checks import check_terms, validity_terms
from dprec.protocol.secure_sum.params import SecureSumParams
from dprec.protocol.secure_sum.proved_relay import ProvedRelay
from dprec.protocol.secure_sum.relay import broadcast_key
from dprec.protocol.secure_sum.vdaf.contribution import ContributionCheck

__all__ = ["RoundRelays", "proved_relay"]


class RoundRelays(ProxySecrets):
    """Round ``r``'s calls go to ``relays[r]`` (module docstring)."""

    agrees_release = True
    needs_broadcast = True

    def __init__(self, relays: Sequence[ProvedRelay], validity: dict[str, Any]) -> None:
        self.relays = tuple(relays)
        self.validity = validity
        self.keys = self.relays[0].keys

    def _of(self, round: int) -> ProvedRelay:
        if not 0 <= int(round) < len(self.relays):
            raise MessageError(f"the run has rounds 0..{len(self.relays) - 1}, got round "
                               f"{round}: refused")
        return self.relays[int(round)]

    def published(self) -> dict[str, Any]:
        return {**self.relays[0].published(), "validity": self.validity}

    def release_bounds(self) -> tuple[int, int]:
        return self.relays[0].release_bounds()

    def see_broadcast(self, round: int, body: bytes) -> None:
        for relay in {id(r): r for r in self.relays}.values():
            relay.see_broadcast(round, body)

    def admit(self, message: Message, round: int) -> None:
        self._of(round).admit(message, round)

    def message_id(self, row: bytes) -> bytes:
        return self.relays[0].message_id(row)

    def verdicts(self, rows: list[bytes], round: int) -> dict[bytes, str | None]:
        return self._of(round).verdicts(rows, round)

    def share_batch(self, rows: list[bytes], round: int) -> bytes:
        return self._of(round).share_batch(rows, round)

    def confirm(self, verdicts: dict[bytes, str | None], answer: Mapping[str, Any],
                round: int) -> dict[bytes, str | None]:
        return self._of(round).confirm(verdicts, answer, round)

    def begin_release(self, round: int) -> None:
        self._of(round).begin_release(round)

    def fold(self, ids: list[bytes], round: int) -> None:
        self._of(round).fold(ids, round)

    def folded_release(self, ids: list[bytes], round: int) -> bytes:
        return self._of(round).folded_release(ids, round)

    def release(self, rows: list[bytes], round: int, threshold: int) -> bytes:
        return self._of(round).release(rows, round, threshold)


def proved_relay(checks: Sequence[ContributionCheck],
                 params: SecureSumParams | Callable[[int], SecureSumParams], state_dir: Path,
                 min_honest: int, n_clients: int) -> ProxySecrets:
    """The proxy's part of a run whose round ``r`` is proved against ``checks[r]``: one
    :class:`ProvedRelay` when every round has the same check (the same public terms), else
    :class:`RoundRelays`."""
    distinct: dict[str, ProvedRelay] = {}
    relays = []
    for check in checks:
        key = json.dumps(check_terms(check), sort_keys=True)
        if key not in distinct:
            distinct[key] = ProvedRelay(check, params, state_dir, min_honest,  # type: ignore[arg-type]
                                        n_clients, broadcast_key)
        relays.append(distinct[key])
    if len(distinct) == 1:
        return relays[0]
    return RoundRelays(relays, validity_terms(checks))
