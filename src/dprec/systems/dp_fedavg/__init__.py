"""dp-fedavg: user-level DP-FedAvg on FCF's model, over a secure sum with Skellam shares
(McMahan, Ramage, Talwar, Zhang, ICLR 2018; issue 24 §2)."""

__all__: list[str] = []
