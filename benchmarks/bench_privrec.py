"""PrivRec round time on ML-100K: M = 30 clients looped vs batched (torch.func.vmap), against
centralised training over the same examples (the floor).

One round = the 30 clients' local training (E2 epochs of mini-batch SGD, batch 32) from the
same theta_0 on the same examples in the same order; the two paths give the same model (the
test suite checks it). The floor: the same examples trained centrally as one pooled
mini-batch stream (E2 epochs, pooled batches of 30 x 32 examples) and as one single
gradient step over all of them. Median of ``--repeats`` rounds after a warm-up round, each
with fresh clients; writes benchmarks/results/privrec_round.json.

    python benchmarks/bench_privrec.py [--repeats 5] [--clients 30]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from dprec.data.features import side_features
from dprec.data.registry import load_dataset
from dprec.models.local_training import (
    LocalTrainer,
    client_examples,
    epoch_orders,
    torch_threads,
)
from dprec.models.side_net import SideFeatureNet, UserRows, parameters_of
from dprec.systems.privrec.config import PrivRecConfig


def central_epochs(net: SideFeatureNet, users: UserRows, who: torch.Tensor, items: torch.Tensor,
                   labels: torch.Tensor, batch: int, epochs: int, lr: float,
                   rng: np.random.Generator) -> None:
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    for _ in range(epochs):
        order = torch.from_numpy(rng.permutation(len(items)))
        for s in range(0, len(items), batch):
            idx = order[s:s + batch]
            u = who[idx]
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                net(users.categorical[u], users.numeric[u], users.multi_hot[u], items[idx]),
                labels[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--clients", type=int, default=30)
    args = ap.parse_args()
    cfg = PrivRecConfig(clients_per_round=args.clients)
    ds = load_dataset("ml-100k")
    f = side_features(ds)
    users = UserRows.from_block(f.users)
    net = SideFeatureNet(f, ds.n_items, dim=cfg.embedding_dim, hidden=cfg.hidden, seed=0)
    trainer = LocalTrainer(net)
    theta0 = parameters_of(net)
    rng = np.random.default_rng(0)
    times: dict[str, list[float]] = {"looped": [], "batched": [], "central_epochs": [],
                                     "central_one_step": []}
    examples = []
    with torch_threads(1):
        for r in range(args.repeats + 1):
            clients = rng.choice(ds.n_users, args.clients, replace=False)
            data = client_examples(ds.matrix, clients, users.take(clients), rng)
            orders = epoch_orders(data.counts, data.items.shape[1], cfg.local_epochs, rng)
            t = {}
            for mode in ("batched", "looped"):
                start = time.perf_counter()
                trainer.local_sgd(theta0, data, orders, cfg.batch_size, cfg.local_lr, cfg.mu,
                                  batched=mode == "batched")
                t[mode] = time.perf_counter() - start
            valid = np.arange(data.items.shape[1])[None, :] < data.counts[:, None]
            rows, cols = np.nonzero(valid)
            who = torch.from_numpy(clients[rows])
            items, labels = data.items[rows, cols], data.labels[rows, cols]
            start = time.perf_counter()
            central_epochs(net, users, who, items, labels, cfg.batch_size * args.clients,
                           cfg.local_epochs, cfg.local_lr, rng)
            t["central_epochs"] = time.perf_counter() - start
            start = time.perf_counter()
            central_epochs(net, users, who, items, labels, len(items), 1, cfg.local_lr, rng)
            t["central_one_step"] = time.perf_counter() - start
            net.load_state_dict({**net.state_dict(), **theta0})
            if r:  # the first round warms torch.func up
                for k, v in t.items():
                    times[k].append(v)
                examples.append(int(data.counts.sum()))
    med = {k: statistics.median(v) for k, v in times.items()}
    out = {
        "dataset": "ml-100k", "clients_per_round": args.clients,
        "local_epochs": cfg.local_epochs, "batch_size": cfg.batch_size,
        "examples_per_round_median": statistics.median(examples),
        "seconds_median": med, "seconds_all": times,
        "batched_speedup_over_looped": med["looped"] / med["batched"],
        "batched_vs_central_epochs": med["batched"] / med["central_epochs"],
        "looped_vs_central_epochs": med["looped"] / med["central_epochs"],
        "batched_vs_central_one_step": med["batched"] / med["central_one_step"],
        "looped_vs_central_one_step": med["looped"] / med["central_one_step"],
        "threads": 1,
    }
    path = Path(__file__).parent / "results" / "privrec_round.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    print(json.dumps({k: v for k, v in out.items() if k != "seconds_all"}, indent=2))


if __name__ == "__main__":
    main()
