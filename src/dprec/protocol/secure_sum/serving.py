"""The server half of every secure-sum system, written once (:class:`SecureSumServing`):
its broadcast is the system's model message (the server's public key first), the store
keeps a :class:`~dprec.protocol.secure_sum.wire.KeyedState` (the model and the server's
private key, so a restarted server opens the shares sealed to its published key; only the
model is ever published), and the round's diagnostics are the clients it summed
(:mod:`dprec.protocol.deployment`). A system gives its role, its memory, its model and
state types."""

from __future__ import annotations

from typing import Any, ClassVar

from dprec.protocol.deployment import Serving
from dprec.protocol.messages import Message
from dprec.protocol.secure_sum.wire import KeyedState
from dprec.protocol.sharding import IntegerSumAdapter

__all__ = ["SecureSumServing"]


class SecureSumServing(Serving):
    """The server half of a secure-sum system (module docstring)."""

    model_type: ClassVar[type[Message]]
    """The broadcast's message (artefact ``model``)."""
    state_type: ClassVar[type[KeyedState[Any]]]
    """What the store keeps: the model and the private key."""
    diagnosed: ClassVar[tuple[str, ...]] = ("contributors", "batches")
    """The role's counts published with each round (integers)."""
    shard_adapter = IntegerSumAdapter
    """A sharded run sums the clients' noisy vectors exactly (what the secure sum yields)."""

    def encode_broadcast(self, info: Any, broadcast: Any, version: int) -> bytes:
        assert isinstance(broadcast, self.model_type)
        return broadcast.to_bytes()

    def decode_broadcast(self, info: Any, body: bytes) -> Any:
        return self.model_type.from_bytes(body)

    def encode_state(self, info: Any, role: Any, broadcast: Any, version: int) -> bytes:
        assert isinstance(role, self.role_type) and isinstance(broadcast, self.model_type)
        return self.state_type(role.private_key(), broadcast).to_bytes()

    def artefact_bytes(self, info: Any, name: str, body: bytes) -> bytes:
        """The model alone: the private key never leaves the store."""
        return self.state_type.from_bytes(body).model.to_bytes()

    def restore(self, info: Any, role: Any, body: bytes | None) -> None:
        if body is not None:
            state = self.state_type.from_bytes(body)
            role.restore(state.private_key, state.model)

    def diagnostics(self, role: Any) -> dict[str, Any]:
        return {name: int(getattr(role, name)) for name in self.diagnosed}

    def mirror(self, local: Any, diagnostics: dict[str, Any]) -> None:
        if isinstance(local, self.role_type) and diagnostics:
            for name in self.diagnosed:
                setattr(local, name, int(diagnostics[name]))

    def service_params(self, local: Any) -> dict[str, str]:
        """The clients enrolled (the data's users: they fix each noise share and q)."""
        assert isinstance(local, self.role_type)
        return {"n_clients": str(local.n_clients)}
