"""Loaders on tiny fixtures written by each test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dprec.data.loaders import (
    load_csv,
    load_ml1m,
    load_ml10m,
    load_ml100k,
    load_movielens_csv,
    ml100k_layout,
)
from dprec.errors import DataError

pytestmark = pytest.mark.usefixtures("no_releases")

# (user, item, rating, timestamp); user 7 rated item 3 twice, the later record wins
RATINGS = [(1, 10, 4, 881250949), (1, 3, 2, 881250950), (7, 3, 5, 891717742),
           (7, 10, 1, 878887116), (2, 5, 3, 884182806)]


def _triples(ds):
    users, items, ratings = ds.triples()
    return {(int(ds.user_ids[u]), int(ds.item_ids[i])): (float(r), int(t))
            for u, i, r, t in zip(users, items, ratings, ds.timestamps, strict=True)}


def _expected():
    return {(u, i): (float(r), t) for u, i, r, t in RATINGS}


def write_grouplens(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "u.data").write_text("".join(f"{u}\t{i}\t{r}\t{t}\n" for u, i, r, t in RATINGS))
    (folder / "u.user").write_text("1|24|M|technician|85711\n2|53|F|other|94043\n"
                                   "7|57|M|administrator|91344\n")
    flags = {3: [0, 0, 0, 0, 0, 1] + [0] * 13, 5: [1] + [0] * 18,
             10: [0, 1, 1] + [0] * 13 + [1, 0, 0]}
    titles = {3: "Les Misérables (1995)", 5: "unknown", 10: "GoldenEye (1995)"}
    dates = {3: "01-Jan-1995", 5: "", 10: "01-Jan-1995"}
    lines = [f"{i}|{titles[i]}|{dates[i]}||http://x|" + "|".join(map(str, flags[i]))
             for i in (3, 5, 10)]
    (folder / "u.item").write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    return folder


def write_atomic(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    head = "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
    (folder / "ml-100k.inter").write_text(
        head + "".join(f"{u}\t{i}\t{r}\t{t}\n" for u, i, r, t in RATINGS))
    (folder / "ml-100k.user").write_text(
        "user_id:token\tage:token\tgender:token\toccupation:token\tzip_code:token\n"
        "1\t24\tM\ttechnician\t85711\n2\t53\tF\tother\t94043\n7\t57\tM\tadministrator\t91344\n")
    (folder / "ml-100k.item").write_text(
        "item_id:token\tmovie_title:token_seq\trelease_year:token\tclass:token_seq\n"
        "3\tLes Misérables\t1995\tComedy\n5\tunkonwn\tunkonwn\tunknown\n"
        "10\tGoldenEye\t1995\tAction Adventure Thriller\n", encoding="utf-8")
    return folder


def test_ml100k_grouplens_layout(tmp_path):
    folder = write_grouplens(tmp_path / "ml-100k")
    assert ml100k_layout(folder) == "grouplens"
    ds = load_ml100k(tmp_path)  # the parent folder works too
    assert ds.name == "ml-100k"
    assert (ds.n_users, ds.n_items, ds.n_interactions) == (3, 3, 5)
    assert _triples(ds) == _expected()
    assert ds.user_features.loc[7, "occupation"] == "administrator"
    assert ds.user_features.loc[2, "age"] == 53
    assert ds.item_features.loc[3, "title"] == "Les Misérables (1995)"
    assert ds.item_features.loc[10, "genres"] == "Action|Adventure|Thriller"
    assert ds.item_features.loc[5, "genres"] == "unknown"
    assert ds.item_features.loc[3, "year"] == 1995
    assert ds.item_features["year"].isna().sum() == 1


def test_ml100k_atomic_layout_matches_grouplens(tmp_path):
    a = load_ml100k(write_atomic(tmp_path / "a"))
    g = load_ml100k(write_grouplens(tmp_path / "g"))
    assert ml100k_layout(tmp_path / "a") == "atomic"
    assert _triples(a) == _triples(g) == _expected()
    assert (a.matrix != g.matrix).nnz == 0
    assert list(a.user_features.columns) == list(g.user_features.columns)
    assert a.item_features.loc[10, "genres"] == g.item_features.loc[10, "genres"]
    assert a.item_features.loc[3, "title"] == "Les Misérables"
    assert a.item_features["year"].isna().sum() == 1  # "unkonwn" in RecBole's file


def test_ml100k_missing_and_corrupt(tmp_path):
    with pytest.raises(DataError, match="no MovieLens-100K"):
        load_ml100k(tmp_path)
    folder = write_grouplens(tmp_path / "g")
    (folder / "u.data").write_text("1\t10\t4\t881250949\n1\t3\tfour\t881250950\n")
    with pytest.raises(DataError, match=r"u\.data: line 2: column 'rating'"):
        load_ml100k(folder)
    (folder / "u.data").write_text("1\t10\t4\t881250949\n1\t3\n")  # truncated line
    with pytest.raises(DataError, match=r"u\.data: line 2"):
        load_ml100k(folder)
    (folder / "u.data").write_text("")
    with pytest.raises(DataError, match=r"u\.data: file is empty"):
        load_ml100k(folder)


def write_ml1m(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ratings.dat").write_text(
        "".join(f"{u}::{i}::{r}::{t}\n" for u, i, r, t in RATINGS))
    (folder / "users.dat").write_text("1::F::1::10::48067\n2::M::56::16::70072\n"
                                      "7::M::25::12::32793-1234\n")
    (folder / "movies.dat").write_bytes(
        "3::Star Wars: Episode IV - A New Hope (1977)::Action|Adventure|Sci-Fi\n"
        "5::Café au lait (1993)::Comedy\n10::Toy Story (1995)::Animation|Children's\n"
        "99::Never Rated (2000)::Drama\n".encode("latin-1"))
    return folder


def test_ml1m(tmp_path):
    write_ml1m(tmp_path / "ml-1m")
    ds = load_ml1m(tmp_path)
    assert ds.name == "ml-1m"
    assert _triples(ds) == _expected()
    assert list(ds.item_ids) == [3, 5, 10]  # the never-rated movie is not an item
    assert ds.item_features.loc[3, "title"].startswith("Star Wars: Episode IV")
    assert ds.item_features.loc[3, "year"] == 1977
    assert ds.item_features.loc[5, "title"] == "Café au lait (1993)"
    assert ds.item_features.loc[10, "genres"] == "Animation|Children's"
    assert ds.user_features.loc[7, "zip_code"] == "32793-1234"
    assert ds.user_features.loc[2, "occupation"] == 16
    assert ds.user_features.loc[1, "gender"] == "F"


def test_ml1m_corrupt(tmp_path):
    folder = write_ml1m(tmp_path)
    (folder / "ratings.dat").write_text("1::10::4::881250949\n1:3:2:881250950\n")
    with pytest.raises(DataError, match=r"ratings\.dat: line 2: expected UserID::MovieID"):
        load_ml1m(folder)
    (folder / "ratings.dat").write_text("1::10::4::881250949\n1::3::x::881250950\n")
    with pytest.raises(DataError, match=r"ratings\.dat: line 2: column 4"):
        load_ml1m(folder)
    (folder / "ratings.dat").write_text("1::10::4::1\n")
    (folder / "movies.dat").write_text("3::Title only\n")
    with pytest.raises(DataError, match=r"movies\.dat: line 1: expected 3"):
        load_ml1m(folder)
    with pytest.raises(DataError, match="nowhere: no such file or directory"):
        load_ml1m(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="empty: no ratings.dat found here or in ml-1m"):
        load_ml1m(tmp_path / "empty")


def test_ml10m_half_stars_no_users(tmp_path):
    folder = tmp_path / "ml-10M100K"
    folder.mkdir()
    (folder / "ratings.dat").write_text("1::122::5::838985046\n1::185::4.5::838983525\n"
                                        "2::122::0.5::868245777\n")
    (folder / "movies.dat").write_text("122::Boomerang (1992)::Comedy|Romance\n"
                                       "185::Net, The (1995)::Action|Crime|Thriller\n")
    ds = load_ml10m(tmp_path)
    assert ds.name == "ml-10m"
    assert ds.user_features is None
    assert sorted(ds.matrix.data.tolist()) == [0.5, 4.5, 5.0]
    assert ds.item_features.loc[185, "title"] == "Net, The (1995)"


def test_movielens_csv(tmp_path):
    folder = tmp_path / "ml-25m"
    folder.mkdir()
    (folder / "ratings.csv").write_text(
        "userId,movieId,rating,timestamp\n"
        + "".join(f"{u},{i},{r},{t}\n" for u, i, r, t in RATINGS))
    (folder / "movies.csv").write_text(
        'movieId,title,genres\n3,"American President, The (1995)",Comedy|Drama|Romance\n'
        "5,Heat (1995),Action|Crime|Thriller\n10,Sabrina (1995),(no genres listed)\n")
    ds = load_movielens_csv(folder)
    assert ds.name == "ml-25m"
    assert _triples(ds) == _expected()
    assert ds.item_features.loc[3, "title"] == "American President, The (1995)"
    assert ds.item_features.loc[5, "genres"] == "Action|Crime|Thriller"
    (folder / "ratings.csv").write_text("userId,movieId,rating\n1,2,3\n")
    with pytest.raises(DataError, match=r"ratings\.csv: missing column\(s\) \['timestamp'\]"):
        load_movielens_csv(folder)


def test_csv_with_header_and_typed_header(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text("userId,movieId,rating,timestamp\n"
                 + "".join(f"{u},{i},{r},{t}\n" for u, i, r, t in RATINGS))
    ds = load_csv(p)
    assert ds.name.startswith("csv#") and ds.history == (f"source: file {p.resolve()}",)
    assert _triples(ds) == _expected()
    q = tmp_path / "r.inter"
    q.write_text("user_id:token\titem_id:token\ttimestamp:float\trating:float\n"
                 + "".join(f"{u}\t{i}\t{t}\t{r}\n" for u, i, r, t in RATINGS))
    typed = load_csv(q)
    assert _triples(typed) == _expected()
    assert typed.name == ds.name  # named by content, not by path or format


def test_csv_headerless_appusage_like(tmp_path):
    p = tmp_path / "apps.csv"
    p.write_text("alice,com.whatsapp\nalice,com.maps\nbob,com.maps\ncarol,com.game\n")
    ds = load_csv(p)
    assert (ds.n_users, ds.n_items, ds.n_interactions) == (3, 3, 4)
    assert list(ds.user_ids) == ["alice", "bob", "carol"]
    assert ds.timestamps is None
    assert np.all(ds.matrix.data == 1.0)
    q = tmp_path / "plain.tsv"
    q.write_text("".join(f"{u}\t{i}\t{r}\t{t}\n" for u, i, r, t in RATINGS))
    d2 = load_csv(q)
    assert d2.user_ids.dtype == np.int64
    assert _triples(d2) == _expected()


def test_csv_explicit_columns_and_dates(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("2020-01-02 00:00:00,u1,i1,ignored\n2020-01-01 00:00:00,u1,i2,ignored\n")
    ds = load_csv(p, columns=["timestamp", "user", "item", None], header=False)
    assert ds.n_interactions == 2
    assert sorted(ds.timestamps.tolist()) == [1577836800, 1577923200]


def test_csv_errors(tmp_path):
    with pytest.raises(DataError, match="missing.csv: file not found"):
        load_csv(tmp_path / "missing.csv")
    p = tmp_path / "five.csv"
    p.write_text("1,2,3,4,5\n")
    with pytest.raises(DataError, match="headerless file needs 2 to 4 columns"):
        load_csv(p)
    p.write_text("user,item,rating\n1,2,3\n1,3,bad\n")
    with pytest.raises(DataError, match=r"five\.csv: line 3: column 'rating'"):
        load_csv(p)
    p.write_text("who,what\n1,2\n")
    with pytest.raises(DataError, match="headerless file needs|must be a number|no user"):
        load_csv(p, header=True)
    p.write_text("user,item,timestamp\n1,2,yesterday-ish\n")
    with pytest.raises(DataError, match="timestamp must be a number or a date"):
        load_csv(p)
    with pytest.raises(DataError, match="columns must name roles"):
        load_csv(p, columns=["user", "item", "when"])


def test_csv_frappe_like_and_whitespace(tmp_path):
    p = tmp_path / "frappe.csv"
    p.write_text("user\titem\tcnt\tdaytime\tweekday\n0\t0\t1\tmorning\tsunday\n"
                 "0\t1\t61\tnight\tmonday\n1\t0\t3\tnoon\tfriday\n")
    ds = load_csv(p)
    assert ds.n_interactions == 3
    assert sorted(ds.matrix.data.tolist()) == [1.0, 3.0, 61.0]  # counts kept as values
    q = tmp_path / "ws.txt"
    q.write_text("u1  i1 5\nu2 i1   3\n")
    d2 = load_csv(q)
    assert list(d2.user_ids) == ["u1", "u2"] and sorted(d2.matrix.data.tolist()) == [3.0, 5.0]


def test_csv_a_header_of_unknown_names_is_refused_not_read_as_an_interaction(tmp_path):
    # issue 31 §4: "customer,product" over numeric ids was one more interaction
    p = tmp_path / "orders.csv"
    p.write_text("customer,product\n1,10\n1,3\n7,3\n")
    with pytest.raises(DataError, match=r"the first line \['customer', 'product'\] is a "
                                        r"header .* no user column\. Accepted names: user: "
                                        r"user, user_id"):
        load_csv(p)
    named = load_csv(p, names={"user": "customer", "item": "product"})
    by_position = load_csv(p, names={"user": "1", "item": "2"})
    for ds in (named, by_position):
        assert ds.n_interactions == 3 and ds.user_ids.dtype == np.int64
        assert sorted(ds.user_ids.tolist()) == [1, 7]
    # told it is data, the first line stays an interaction (text ids)
    assert load_csv(p, header=False).n_interactions == 4
    # a headerless file of text ids is still data, as is one whose first ids are text too
    q = tmp_path / "apps.csv"
    q.write_text("alice,com.maps\nbob,1\nbob,com.game\n")
    assert load_csv(q).n_interactions == 3
