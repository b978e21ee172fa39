"""The proxy's forwarding: batches made from held submissions, queued in the outbox and
sent to the server (retried while it is unreachable; kept, with the refusal, while it
refuses them). A mixin of :class:`~dprec.services.proxy.state.ProxyState`, which holds the
store, the HTTP client and the locks."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import httpx

from dprec.errors import DprecError
from dprec.random import secure_generator
from dprec.services.http import (
    ApiError,
)

log = logging.getLogger("dprec.services.proxy")

__all__ = ["Forwarding", "Unreachable", "error_text"]


class Unreachable(Exception):
    """The server did not answer (connection error, timeout or 5xx)."""


class Forwarding:
    """Making batches, sending the outbox, following the server (module docstring)."""

    def _shuffler(self, round: int) -> Callable[[list[bytes]], bytes]:
        """How a batch of ``round``'s held submissions is made: shuffled on a CSPRNG (the
        system's :meth:`~dprec.protocol.deployment.Deployment.shuffle`: canonical order,
        then a uniform permutation drawn here from a fresh ChaCha20 key), or released by
        the protocol's secret part (:meth:`ProxySecrets.release`: a secure sum's one batch,
        its mask sum recomputed from the held submissions). The batch depends only on the
        multiset of submissions.
        """
        info, secrets = self.info, self.secrets
        assert info is not None
        if secrets is not None:
            return lambda rows: secrets.release(rows, round, self.settings.threshold)
        return lambda rows: info.deployment.shuffle(rows, info, secure_generator(),
                                                    self.settings.threshold)

    async def send_outbox(self) -> None:
        """Send every queued batch once; :class:`Unreachable` if the server does not answer.

        Accepted (200/201): delivered. Refused with 409 for a round the server has closed:
        that round's held and queued submissions are lost (:meth:`ProxyStore.lose`).
        Any other refusal: the batch stays queued, with the refusal (:meth:`problem`).
        """
        async with self._send_lock:
            server_round: int | None = None
            gone: set[int] = set()
            for key, round, senders, body in self.store.outbox():
                if round in gone:
                    continue
                try:
                    r = await self.http.post(
                        f"/v1/rounds/{round}/batches", content=body,
                        headers={**self.auth, "Idempotency-Key": key,
                                 "Content-Type": "application/octet-stream"})
                except httpx.HTTPError as e:
                    raise Unreachable(type(e).__name__) from None
                if r.status_code >= 500 or r.status_code == 429:
                    raise Unreachable(f"status {r.status_code}")
                if r.status_code in (200, 201):
                    self.store.delivered(key)
                    continue
                if r.status_code == 409:
                    if server_round is None:
                        server_round = await self._server_round()
                    if server_round > round:  # closed on the server: never deliverable
                        gone.add(round)
                        self._behind = True
                        continue
                error = error_text(r)
                known = {(st, er) for _, _, st, er in self.store.refusals(round)}
                if (r.status_code, error) not in known:
                    log.error("the server refused a batch of %d senders in round %d (%d: %s); "
                              "kept, sent again later; submissions paused", senders, round,
                              r.status_code, error)
                self.store.refused(key, r.status_code, error)
            for round in gone:
                lost = self.store.lose(round)
                log.error("the server closed round %d before it took %d acknowledged "
                          "submissions: they are lost (the round's outcome counts them)",
                          round, lost)

    async def _server_round(self) -> int:
        """The server's open round (-1 before its start)."""
        state = await self._get("/v1/round")
        return int(state["round"]) if state.get("started") else -1

    async def pump(self) -> None:
        """Background: send queued batches whenever some are formed, retrying with backoff
        while the server is unreachable, and refused batches every 30 s."""
        backoff = 0.1
        while True:
            if self.store.refusals():
                try:
                    await asyncio.wait_for(self._wake.wait(), 30.0)
                except TimeoutError:
                    pass
            else:
                await self._wake.wait()
            self._wake.clear()
            try:
                await self.send_outbox()
                if self._behind:
                    await self.sync()
                backoff = 0.1
            except Unreachable as e:
                log.warning("the server is unreachable (%s); retrying in %.1f s", e, backoff)
                await asyncio.sleep(backoff)
                backoff = min(5.0, 2 * backoff)
                self._wake.set()
            except DprecError as e:
                log.error("could not follow the server: %s", e)

    async def _retrying(self, what: str, fn: Any) -> Any:
        deadline = asyncio.get_running_loop().time() + self.settings.retry_for
        delay = 0.05
        while True:
            try:
                return await fn()
            except Unreachable as e:
                if asyncio.get_running_loop().time() > deadline:
                    raise ApiError(503, f"the server is unreachable ({e}) while {what}; "
                                        "retry") from None
                await asyncio.sleep(delay)
                delay = min(1.0, 2 * delay)


def error_text(r: httpx.Response) -> str:
    """The ``error`` of a service's JSON refusal, else the start of its body."""
    try:
        doc = r.json()
    except ValueError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("error"), str):
        return doc["error"][:300]
    return r.text[:300]
