"""Messages of the DPLCF protocol: obfuscated bit vectors up, neighbour lists down.

Defined with every other message in :mod:`dprec.protocol.messages` (one framing, validated
decoders); re-exported here for the DPLCF client and server.
"""

from dprec.protocol.messages import NeighbourLists, ObfuscatedBits

__all__ = ["NeighbourLists", "ObfuscatedBits"]
