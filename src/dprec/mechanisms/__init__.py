"""Privacy mechanisms: each validates its parameters, samples with an explicit Generator,
emits the privacy event of one use (:class:`~dprec.mechanisms.base.Mechanism`: ``__call__``,
``dp_event``, ``describe``) and leaves what it costs to the accountants."""

from dprec.mechanisms.base import Mechanism, event_guarantee
from dprec.mechanisms.bitflip import BitFlip

__all__ = ["BitFlip", "Mechanism", "event_guarantee"]
