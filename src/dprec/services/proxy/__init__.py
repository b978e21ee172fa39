"""``dprec serve proxy``: the shuffler between clients and the untrusted server.

Per submission (``POST /v1/rounds/{round}/reports``, one client message as bytes): a token
bucket per remote address (429), the client's token checked against its id (401; tokens are
HMACs of the id, :mod:`dprec.services.auth`), the open round (409), the body size before
reading it all (413), the message decoded (400) and checked against what the protocol's
client can send (422), one submission per client and round (409). What is kept is the
message without its sender's id, in a bag (:class:`~dprec.services.store.ProxyStore`);
nothing else about the request (address, headers, time) is kept or logged.

Forwarding: once the bag holds ``batch_senders + threshold`` submissions of the open round,
``batch_senders`` of them are shuffled and queued as one batch (so at least ``threshold``
stay behind); closing the round (``POST /v1/rounds/{round}/close``, authenticated by the
operator's own secret, never the proxy-server secret the server holds; or
``--round-seconds``) queues the rest if they number ``threshold`` or more, and refuses them
otherwise (``below_threshold``, as the simulation's shuffler refuses a round). A batch is
shuffled by the simulation's own :class:`~dprec.protocol.shuffler.Shuffler` (canonical
order, then a uniform permutation) on a CSPRNG (:func:`~dprec.random.secure_generator`), sent
to the server under a random idempotency key, and deleted once the server acknowledges it.
After a crash, queued batches are sent again under the same key and the server counts each
once.

A protocol whose descriptor sets ``one_batch`` (a secure sum) forms no batch while the round
is open: the close agrees the set of valid uploads with the server and forwards ONE batch
over exactly that set, durably queued before it is sent, or ends the round below the
threshold (:mod:`dprec.services.rounds`: every upload's own outcome, the release rule
``max(threshold, min_honest)`` to ``n_clients``, settings that can never release refused
at start, the published ``min_honest`` and ``n_clients`` checked against ``--min-honest``
and ``--n-clients``). The batch is made by the protocol's secret part
(:meth:`~dprec.protocol.deployment.Deployment.proxy_secrets`, e.g. the secure sum's proxy
key, kept in the state folder), which also checks every upload before it is
held (422) and whose public part ``GET /v1/round`` publishes (``published``). An upload
repeating an accepted upload's id (:meth:`~dprec.protocol.deployment.Deployment.unique_id`)
is a replay (409). The batch is computed from the held submissions alone, so a proxy
killed mid-round and restarted releases the same sum. A secret part that checks uploads
against the round's broadcast (FMF-LDP's ``cells=assigned``) gets it from the server at the
round's first upload; one that takes the operator's key gets it by ``POST /v1/secret``; one
that hands each client its own secret (FMF-LDP's cells token) answers ``GET /v1/client/secret``
to that client alone (its token and id, as for uploads; 401 otherwise).

What a 202 promises: the submission is held on disk and the round's outcome accounts for it,
as forwarded (the server took its batch), below the threshold, or lost; the proxy never
drops one silently. Hence:

- A batch the server refuses (any 4xx but 429) is kept in the outbox with the refusal, sent
  again on every close and every 30 s, and never counted as forwarded. While the server
  refuses the proxy's batches the proxy takes no submission (503, naming the refusal), and
  a close answers 409 without closing the round (it stays closing: fix the server, close
  again). The server publishes its batch limit (``limits.max_batch_bytes`` in
  ``/v1/protocol``); a proxy whose largest batch (``batch_senders + threshold - 1``
  submissions) would not fit takes no submission at all (503, naming both sizes).
- The server's own close (``POST /v1/rounds/{round}/close`` on the server, an operator
  action that bypasses the proxy) ends the round for good: a batch the server refuses
  (409) for a round it has closed, and whatever the proxy still holds of that round, are
  lost, counted in the round's outcome (``lost_senders``, ``forwarded: false``). The proxy
  learns of such a close from that refusal, from any close or status request, and from a
  submission when it last asked the server more than ``watch_seconds`` ago; from then on
  it refuses the round's submissions (409). Submissions acknowledged between the server's
  close and the proxy learning of it can only be counted as lost: close rounds through the
  proxy, which forwards everything it holds first.

A round's outcome: ``senders`` (acknowledged), ``forwarded_senders`` and ``batch_senders``
(what the server accepted, batch by batch), ``below_threshold``, ``lost_senders`` (and
``lost_reason``), ``forwarded`` (true when the server took every acknowledged submission
that was not below the threshold, and at least one), the ``threshold``, and the server's
own record of the round (``server``). ``GET /v1/round`` states whether the proxy takes
submissions (``accepting``) and why not (``problem``).

What it enforced: the ``threshold`` and the senders of every batch the server accepted
(:func:`~dprec.protocol.engine.forwarded_batch_sizes` of the round's senders), beside the
server's own record of the batches it accepted. A proxy started with a threshold below the
protocol's published ``shuffle_threshold`` logs a warning.

The package, one job per module: :mod:`.settings` (what the proxy is started with),
:mod:`.state` (the proxy's state, its view of the server, submissions), :mod:`.forwarding`
(batches to the server), :mod:`.closing` (closing a round, the agreed secure-sum release),
:mod:`.secure_sum_routes` (the secure-sum routes) and :mod:`.app` (the FastAPI app).
"""

from dprec.services.proxy.app import create_proxy_app
from dprec.services.proxy.settings import ProxySettings, check_url

__all__ = ["ProxySettings", "check_url", "create_proxy_app"]
