"""PrivRec and DP-PrivRec as services, the server half: the :class:`ReptileServer` role, a
trusted aggregator (it sees every selected client's update; DP-PrivRec's noise is its own).

Its broadcast, published as the artefact ``model``, is the :class:`ModelBroadcast` (theta_0
as float32, the next round's clients, the clip bound). The store keeps a
:class:`ServerState`: that broadcast and the role's own generator, from which the next
rounds' selection and noise are drawn; the generator is never published (knowing it would
let anyone subtract DP-PrivRec's noise). A deployed server's generator is a CSPRNG whose
state is not kept at all (``ReptileServer.generator_state``): a restart draws from a fresh
one. theta_0 and the enrolled clients arrive with the
start (:class:`InitialModel`) (:mod:`dprec.protocol.deployment`).
"""

from __future__ import annotations

from typing import Any

from dprec.errors import DprecError
from dprec.protocol.aggregation import Aggregator
from dprec.protocol.deployment import Serving
from dprec.systems.privrec.messages import InitialModel, ModelBroadcast, ServerState
from dprec.systems.privrec.server import ReptileServer

__all__ = ["SERVING", "PrivRecServing"]


class PrivRecServing(Serving):
    """The server half of the federated PrivRec variants."""

    role_type = ReptileServer
    trusted_aggregator = True

    def server_role(self, info: Any, aggregator: Aggregator) -> ReptileServer:
        """As ``SideNetRecommender.fit`` builds it, waiting for its initial state."""
        return ReptileServer(None, None, None, info.config,
                             n_items=info.n_items)

    def role_memory(self, info: Any) -> tuple[int, int, str]:
        """theta_0, P float32; a round also holds the M updates (the batch, their stack and
        the clipped copy) and the noise, float64."""
        p, m = int(info.config.n_params), int(info.config.clients_per_round)
        state = 4 * p
        return state, 3 * state + 12 * m * p + 8 * p, f"the model ({p:,} float32 parameters)"

    def encode_broadcast(self, info: Any, broadcast: Any, version: int) -> bytes:
        assert isinstance(broadcast, ModelBroadcast)
        return broadcast.to_bytes()

    def decode_broadcast(self, info: Any, body: bytes) -> ModelBroadcast:
        return ModelBroadcast.from_bytes(body)

    def encode_state(self, info: Any, role: Any, broadcast: Any, version: int) -> bytes:
        """The broadcast and the role's generator."""
        assert isinstance(role, ReptileServer) and isinstance(broadcast, ModelBroadcast)
        return ServerState(broadcast, role.generator_state()).to_bytes()

    def artefact_bytes(self, info: Any, name: str, body: bytes) -> bytes:
        """The broadcast of the kept state (without the generator)."""
        return ServerState.from_bytes(body).broadcast.to_bytes()

    def restore(self, info: Any, role: Any, body: bytes | None) -> None:
        if body is not None:
            state = ServerState.from_bytes(body)
            role.resume(state.broadcast, state.generator)

    def initial_state(self, local: Any) -> bytes:
        """theta_0 and the enrolled clients of the simulation's role."""
        assert isinstance(local, ReptileServer)
        if local.theta is None or local.train_users is None:
            raise DprecError("the simulation's server has no initial model")
        return InitialModel(local.theta, local.train_users).to_bytes()

    def initialise(self, info: Any, role: Any, body: bytes) -> None:
        initial = InitialModel.from_bytes(body)
        role.initialise(initial.params, initial.enrolled)

    def diagnostics(self, role: Any) -> dict[str, Any]:
        """DP-PrivRec's clip bound after the round and the noisy unclipped fraction."""
        if not role.clip_history:
            return {}
        return {"clip_bound": role.clip_history[-1],
                "noisy_unclipped_fraction": role.unclipped_history[-1]}

    def mirror(self, local: Any, diagnostics: dict[str, Any]) -> None:
        if isinstance(local, ReptileServer) and diagnostics:
            local.clip_history.append(float(diagnostics["clip_bound"]))
            local.unclipped_history.append(float(diagnostics["noisy_unclipped_fraction"]))

    def service_params(self, local: Any) -> dict[str, str]:
        """The network's size (public with the protocol)."""
        assert isinstance(local, ReptileServer) and local.theta is not None
        return {"n_params": str(local.theta.size)}


SERVING = PrivRecServing()
