"""Privacy mechanisms: each validates its parameters, samples with an explicit Generator,
states its guarantee and describes itself for the privacy report."""

from dprec.mechanisms.bitflip import BitFlip

__all__ = ["BitFlip"]
