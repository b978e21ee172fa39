"""Closing a round at the proxy: forward what it holds (or refuse it below the threshold),
or, for a secure sum, agree the valid set with the server chunk by chunk and queue the one
release (:mod:`dprec.services.rounds`); then close the round on the server and record each
upload's outcome. A mixin of :class:`~dprec.services.proxy.state.ProxyState`."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx

from dprec.errors import DprecError
from dprec.services.http import (
    ApiError,
)
from dprec.services.proxy.forwarding import Unreachable, error_text
from dprec.services.rounds import (
    settle_round,
    upload_outcomes,
    verdicts_from_json,
)

log = logging.getLogger("dprec.services.proxy")

__all__ = ["Closing"]


class Closing:
    """The round's close and its timer (module docstring)."""

    def _outcome(self, round: int, server: dict[str, Any] | None) -> dict[str, Any]:
        """What became of the round's acknowledged submissions (see the module docstring)."""
        delivered = self.store.delivered_senders(round)
        lost = self.store.lost_senders(round)
        out: dict[str, Any] = {
            "round": round, "senders": self.store.senders(round),
            "forwarded_senders": delivered, "forwarded": delivered > 0 and lost == 0,
            "below_threshold": self.store.below_threshold(round), "lost_senders": lost,
            "threshold": self.settings.threshold,
            "batch_senders": self.store.delivered_batches(round), "server": server}
        if lost:
            why = self.store.lost_reason(round)
            out["lost_reason"] = (f"the server closed round {round} before it took them"
                                  + (f"; it had refused their batch ({why})" if why else ""))
        uploads = self.store.uploads(round)
        if uploads is not None:  # an agreed release: every upload's own outcome
            out["refused_senders"] = self.store.refused_senders(round)
            out["release_rule"] = None if self.rule is None else {
                "fewest": self.rule.fewest, "most": self.rule.most}
            out.update(upload_outcomes(uploads, delivered > 0 and lost == 0,
                                       out.get("lost_reason")))
        return out

    async def close(self, round: int) -> dict[str, Any]:
        async with self._close_lock:
            info = await self.ensure_synced()
            try:
                await self.sync()  # learn a close on the server before anything else
            except Unreachable:
                pass
            if round < self.round:
                done = self.store.outcome(round)
                if done is None:
                    raise ApiError(409, f"round {round} was closed without this proxy")
                return done
            if self._closing != round:
                self._open_round(round)
                # from here on the round takes no submissions, even across a restart
                self.store.set_meta("closing", round)
                self._closing = round
            held = self.store.held(round)
            if self.rule is not None:
                assert self.secrets is not None
                if self.secrets.needs_broadcast and self.store.uploads(round) is None:
                    await self._broadcast_for(round, info)
                await settle_round(self.store, self.secrets, self.rule, round,
                                   self._server_verdicts, self._check_chunk)
            elif held >= self.settings.threshold:
                self.store.form_batch(round, None, self._shuffler(round))
            elif held:  # below the threshold (then nothing was forwarded before): refused
                dropped = self.store.drop_held(round)
                log.info("round %d: %d senders held, below the threshold %d: refused", round,
                         dropped, self.settings.threshold)
            self._held[round] = 0
            await self._retrying("forwarding", self.send_outbox)
            if self._behind:  # the server closed the round meanwhile
                await self._retrying("following the server", self.sync)
                done = self.store.outcome(round)
                assert done is not None
                return done
            refused = self.store.refusals(round)
            if refused:
                raise ApiError(409, f"round {round} is not closed: {self.problem()}; fix the "
                                    "server, then close again")

            async def close_on_server() -> dict[str, Any]:
                try:
                    r = await self.http.post(f"/v1/rounds/{round}/close", headers=self.auth)
                except httpx.HTTPError as e:
                    raise Unreachable(type(e).__name__) from None
                if r.status_code >= 500:
                    raise Unreachable(f"status {r.status_code}")
                if r.status_code != 200:  # 409: the server's reason (e.g. what it refuses)
                    raise ApiError(409 if r.status_code == 409 else 502,
                                   f"the server refused to close round {round}: "
                                   f"{error_text(r)}")
                return r.json()

            server = await self._retrying("closing the round", close_on_server)
            outcome = self._outcome(round, server)
            nxt = int(server["next_round"])
            self.store.finish_round(round, outcome, nxt)
            self._round = nxt
            self._held = {nxt: 0}
            self.server_state = {**self.server_state, "round": nxt,
                                 "finished": nxt >= info.rounds}
            log.info("round %d closed: %d senders, forwarded=%s", round, outcome["senders"],
                     outcome["forwarded"])
            return outcome

    async def _server_verdicts(self, round: int, batch: bytes) -> dict[bytes, str | None]:
        """The server's verdict on each share of ``batch`` (retried while unreachable)."""
        async def ask() -> dict[bytes, str | None]:
            try:
                r = await self.http.post(
                    f"/v1/rounds/{round}/shares", content=batch,
                    headers={**self.auth, "Content-Type": "application/octet-stream"})
            except httpx.HTTPError as e:
                raise Unreachable(type(e).__name__) from None
            if r.status_code >= 500 or r.status_code == 429:
                raise Unreachable(f"status {r.status_code}")
            if r.status_code != 200:
                raise ApiError(409, f"round {round} is not closed: the server did not check "
                                    f"its shares ({r.status_code}: {error_text(r)}); close "
                                    "again")
            try:
                doc = r.json()
                assert self.secrets is not None
                return self.secrets.confirm(verdicts_from_json(doc), doc, round)
            except (ValueError, DprecError) as e:
                raise ApiError(502, f"the server's share check is malformed: {e}") from None

        return await self._retrying("checking the shares", ask)

    async def round_timer(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                await self.ensure_synced()
                if self.server_state.get("started") and self.info is not None \
                        and self.round < self.info.rounds:
                    await self.close(self.round)
            except (ApiError, DprecError) as e:
                log.warning("could not close the round on the timer: %s", e)
