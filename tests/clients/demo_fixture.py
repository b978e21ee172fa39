"""A small catalogue for the demo's tests (no network, no MovieLens files): ``n_users`` users
with a few films each out of ``n_items`` titled films, built as dprec's ML-100K loader builds
its data set (item features with ``title`` and ``year``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dprec.data.dataset import Dataset


def fixture_catalogue(n_users: int = 230, n_items: int = 40, per_user: int = 4,
                      seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    users = np.repeat(np.arange(1, n_users + 1), per_user)
    # popular films first: a skewed choice, each user's films distinct
    p = 1.0 / np.arange(1, n_items + 1)
    p /= p.sum()
    items = np.concatenate([rng.choice(n_items, per_user, replace=False, p=p) + 1
                            for _ in range(n_users)])
    titles = [f"Film {i:03d}" + (" & Friends" if i % 7 == 0 else "") for i in range(n_items)]
    features = pd.DataFrame({"title": titles, "year": pd.array([1990 + i % 10 if i % 9 else None
                                                                for i in range(n_items)],
                                                               dtype="Int64"),
                             "genres": ["Drama"] * n_items},
                            index=pd.Index(np.arange(1, n_items + 1), name="item_id"))
    ratings = np.full(users.size, 5.0)
    return Dataset.from_triples("demo-fixture", users, items, ratings,
                                item_features=features, all_item_ids=np.arange(1, n_items + 1))


def write_grouplens(folder, n_users: int = 500, n_items: int = 200):
    """An ML-100K look-alike in the GroupLens layout that dprec's loader accepts: exactly
    100,000 ratings (every user rates every film) inside the release's time span, titled
    films in ``u.item``. Returns ``folder``."""
    from pathlib import Path

    from dprec.data.loaders.movielens import ML100K_GENRES

    assert n_users * n_items == 100_000
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    users = np.repeat(np.arange(1, n_users + 1), n_items)
    items = np.tile(np.arange(1, n_items + 1), n_users)
    stars = (users * 7 + items * 3) % 5 + 1
    ts = 880_000_000 + np.arange(users.size)
    (folder / "u.data").write_text("".join(f"{u}\t{i}\t{r}\t{t}\n"
                                           for u, i, r, t in zip(users, items, stars, ts,
                                                                 strict=True)))
    (folder / "u.user").write_text("".join(f"{u}|30|F|writer|12345\n"
                                           for u in range(1, n_users + 1)))
    flags = "|".join(["0"] * (len(ML100K_GENRES) - 1) + ["1"])
    (folder / "u.item").write_text("".join(
        f"{i}|Fixture Film {i} (1995)|01-Jan-1995||http://example.invalid/{i}|{flags}\n"
        for i in range(1, n_items + 1)))
    return folder
