"""The proxy's agreed release of a secure-sum round (issue 31 §2; the protocol is
:mod:`dprec.protocol.secure_sum.validity`).

At the close of a round of a protocol whose secret part agrees its release with the server
(:attr:`~dprec.protocol.deployment.ProxySecrets.agrees_release`):

1. chunk by chunk (:data:`~dprec.protocol.secure_sum.validity.CHECK_CHUNK_BYTES` of held
   uploads at a time), the proxy takes its own verdict on each held upload (its seed box
   opens, or its proof's Helper share prepares);
2. it sends the server the chunk's shares of the uploads it found valid, without a mask
   sum (``POST /v1/rounds/{round}/shares``), and gets the server's verdict on each; a
   secret part that folds (:meth:`~dprec.protocol.secure_sum.proved_relay.ProvedRelay.fold`,
   the proved sum) adds the chunk's agreed uploads to its running aggregate share and
   forgets the chunk. No chunk takes more uploads than the release rule's most minus those
   already agreed, so the agreed set never exceeds ``n_clients`` (uploads past it are
   refused; the held rows' order is random, so those kept are a uniform draw);
3. it applies the :class:`ReleaseRule` (at least ``max(threshold, min_honest)``), and in
   ONE transaction queues the release over exactly that set, forgets the held uploads and
   records every upload's verdict (:meth:`~dprec.services.store.ProxyStore.settle`). A
   retry or a restart re-sends that queued release under the same idempotency key; no
   second set is ever released.

A round with fewer held uploads than the rule's least is settled without asking the
server anything.

Every acknowledged upload then ends in exactly one outcome (:func:`upload_outcomes`):
``summed`` (in the release the server took and summed), ``refused`` (with the reason: the
proxy's or the server's), ``below_threshold`` (the valid set was smaller than the rule's
least; nothing released) or ``lost`` (with the reason: the server closed the round first).

Where the proxy's bounds come from: the published protocol's ``min_honest`` and
``n_clients`` (what clients size their noise and the ring by), checked against the proxy's
own ``--min-honest`` and ``--n-clients`` when given; when not given, against the first
values the proxy saw, pinned in its state folder (so a server cannot change them under a
running proxy). A mismatch stops the proxy taking submissions (``problem``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from dprec.errors import DprecError
from dprec.protocol.deployment import ProxySecrets
from dprec.protocol.secure_sum.validity import CHECK_CHUNK_BYTES, ReleaseRule, agree
from dprec.random import secure_generator
from dprec.services.store import ProxyStore

__all__ = ["ServerVerdicts", "bounds_problem", "lose_held", "release_rule", "settle_round",
           "upload_outcomes"]

ServerVerdicts = Callable[[int, bytes], Awaitable[dict[bytes, str | None]]]
"""``(round, share batch) -> verdicts``: asks the server (``POST /v1/rounds/{round}/shares``)."""


def release_rule(secrets: ProxySecrets, threshold: int) -> ReleaseRule:
    """The rule of the published protocol for a proxy with ``threshold``;
    :class:`DprecError` (said at start) if it can never release."""
    min_honest, n_clients = secrets.release_bounds()
    return ReleaseRule(int(threshold), int(min_honest), int(n_clients))


def bounds_problem(secrets: ProxySecrets, store: ProxyStore, min_honest: int | None,
                   n_clients: int | None) -> str | None:
    """Why the published ``min_honest`` / ``n_clients`` are not the ones this proxy expects
    (its own settings, else the first values it saw, pinned in ``store``); None if they are.
    A server inflating either would shrink every client's noise share."""
    published = dict(zip(("min_honest", "n_clients"), secrets.release_bounds(), strict=True))
    expected = {"min_honest": min_honest, "n_clients": n_clients}
    pinned = store.meta("release_bounds")
    if pinned is None:
        store.set_meta("release_bounds", published)
        pinned = published
    for name, value in published.items():
        want = expected[name] if expected[name] is not None else pinned[name]
        if int(value) != int(want):
            where = f"--{name.replace('_', '-')} {want}" if expected[name] is not None \
                else f"{want}, the value this proxy first saw"
            return (f"the server publishes {name} = {value}, not {where}: clients would size "
                    f"their noise by it; no submission is taken (restart the server with the "
                    "agreed value)")
    return None


async def settle_round(store: ProxyStore, secrets: ProxySecrets, rule: ReleaseRule,
                       round: int, ask: ServerVerdicts, chunk_bytes: int = CHECK_CHUNK_BYTES
                       ) -> None:
    """Agree the round's valid set with the server and queue the one release (module
    docstring); nothing if the round is already settled."""
    if store.uploads(round) is not None:
        return
    folds = callable(getattr(secrets, "fold", None))
    if callable(getattr(secrets, "begin_release", None)):
        secrets.begin_release(round)  # type: ignore[attr-defined]
    asks = store.held(round) >= rule.fewest  # too few to release: the server sees nothing
    valid: list[bytes] = []
    refused: dict[bytes, str] = {}
    for rows in store.held_chunks(round, chunk_bytes):
        ids = [secrets.message_id(body) for body in rows]
        mine = secrets.verdicts(rows, round)
        fine = [(b, m) for b, m in zip(rows, ids, strict=True) if mine.get(m) is None]
        room = max(0, rule.most - len(valid))
        for _, mid in fine[room:]:
            refused[mid] = (f"the round held more valid uploads than n_clients = {rule.most} "
                            "(the ring q covers at most that many); this one was not drawn")
        fine = fine[:room]
        if asks and fine:
            theirs = await ask(round, secrets.share_batch([b for b, _ in fine], round))
        else:
            theirs = {m: None for _, m in fine}
        mine = {m: mine.get(m, "it does not parse") for m in ids if m not in refused}
        ok, no = agree(mine, theirs)
        refused.update(no)
        valid.extend(ok)
        if folds:
            secrets.fold(ok, round)  # type: ignore[attr-defined]
    released, extra, below = rule.choose(valid, secure_generator())
    refused.update(extra)
    body = None
    if released and folds:
        body = secrets.folded_release(sorted(released), round)  # type: ignore[attr-defined]
    elif released:
        chosen = set(released)
        body = secrets.release([b for rows in store.held_chunks(round, chunk_bytes)
                                for b in rows if secrets.message_id(b) in chosen],
                               round, rule.fewest)
    store.settle(round, body, [m.hex() for m in released],
                 {m.hex(): why for m, why in refused.items()},
                 sorted(m.hex() for m in below))


def lose_held(store: ProxyStore, secrets: ProxySecrets, round: int, why: str) -> None:
    """Every held upload of an unsettled ``round`` is lost with the reason ``why`` (the
    server closed the round before the proxy released it)."""
    if store.uploads(round) is not None:
        return
    lost = {secrets.message_id(body).hex(): why
            for rows in store.held_chunks(round, CHECK_CHUNK_BYTES) for body in rows}
    store.settle(round, None, [], {}, [], lost)


def upload_outcomes(uploads: dict[str, Any], summed: bool, lost_reason: str | None
                    ) -> dict[str, Any]:
    """Each upload's one outcome (``summed``, ``refused``, ``below_threshold``, ``lost``),
    with the counts and the refusals counted by reason: ``summed`` when the server took the
    release, ``lost`` (with ``lost_reason``) when it closed the round without it."""
    each: dict[str, dict[str, str]] = {}
    for mid, why in uploads["refused"].items():
        each[mid] = {"outcome": "refused", "reason": why}
    for mid in uploads["below_threshold"]:
        each[mid] = {"outcome": "below_threshold",
                     "reason": "the round's valid uploads were fewer than the release rule's "
                               "least; nothing was released"}
    for mid, why in uploads.get("lost", {}).items():
        each[mid] = {"outcome": "lost", "reason": why}
    for mid in uploads["released"]:
        each[mid] = {"outcome": "summed"} if summed else \
            {"outcome": "lost", "reason": lost_reason or "the server did not take the release"}
    counts = {k: 0 for k in ("summed", "refused", "below_threshold", "lost")}
    reasons: dict[str, int] = {}
    for o in each.values():
        counts[o["outcome"]] += 1
        if o["outcome"] == "refused":
            reasons[o["reason"]] = reasons.get(o["reason"], 0) + 1
    return {"outcomes": counts, "refused_reasons": reasons,
            "uploads": dict(sorted(each.items()))}


def verdicts_from_json(doc: Any) -> dict[bytes, str | None]:
    """The server's answer ``{"verdicts": {hex id: reason or null}}``, checked."""
    raw = doc.get("verdicts") if isinstance(doc, dict) else None
    if not isinstance(raw, dict):
        raise DprecError("the server's share check has no verdicts")
    out: dict[bytes, str | None] = {}
    for key, why in raw.items():
        try:
            mid = bytes.fromhex(key)
        except (TypeError, ValueError):
            raise DprecError("the server's share check names a malformed message id") from None
        if why is not None and not isinstance(why, str):
            raise DprecError("the server's share check gives a reason that is not text")
        out[mid] = None if why is None else why[:300]
    return out
