"""Hostile inputs, by class: each catalogue row is an input class, a fixture writer and what
must happen (the error fragment, or the same data as the plain file).

To add a case, add a row: ``Bad(writer, fragment)`` where the writer writes the fixture under
the test's folder and returns the call that loads it.
"""

from __future__ import annotations

import codecs
import gzip
import importlib
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dprec.data.dataset import Dataset
from dprec.data.loaders import load_csv, load_ml1m, load_ml100k, load_movielens_csv
from dprec.data.registry import load_dataset
from dprec.errors import DataError
from dprec.random import derive_generator

synthetic_module = importlib.import_module("dprec.data.synthetic")  # not the function

Load = Callable[[], Dataset]
Writer = Callable[[Path], Load]

ML1M_TS, ML20M_TS, ML100K_TS = 978_300_760, 1_112_486_027, 881_250_949


# --------------------------------------------------------------------------- fixture writers


def csv_file(content: str | bytes, options: str = "", name: str = "r.csv") -> Writer:
    """A generic CSV loaded as ``csv:PATH<options>``."""
    def write(tmp: Path) -> Load:
        p = tmp / name
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8", newline="")
        return lambda: load_dataset(f"csv:{p}{options}")
    return write


def ml1m(lines: str) -> Writer:
    """ratings.dat in an ``ml-1m`` folder, loaded as ``ml-1m`` with --data-dir."""
    def write(tmp: Path) -> Load:
        (tmp / "ml-1m").mkdir()
        (tmp / "ml-1m" / "ratings.dat").write_text(lines)
        return lambda: load_dataset("ml-1m", data_dir=tmp)
    return write


def ml10m(lines: str) -> Writer:
    def write(tmp: Path) -> Load:
        (tmp / "ml-10M100K").mkdir()
        (tmp / "ml-10M100K" / "ratings.dat").write_text(lines)
        return lambda: load_dataset("ml-10m", data_dir=tmp)
    return write


def ml_csv(name: str, body: str) -> Writer:
    """ratings.csv of ML-20M/25M, loaded as ``name`` with --data-dir."""
    def write(tmp: Path) -> Load:
        (tmp / name).mkdir()
        (tmp / name / "ratings.csv").write_text("userId,movieId,rating,timestamp\n" + body)
        return lambda: load_dataset(name, data_dir=tmp)
    return write


def ml100k(u_data: str) -> Writer:
    """A GroupLens-layout ML-100K folder around ``u_data``, loaded with load_ml100k."""
    def write(tmp: Path) -> Load:
        folder = tmp / "ml-100k"
        folder.mkdir()
        (folder / "u.data").write_text(u_data)
        (folder / "u.user").write_text("1|24|M|technician|85711\n")
        (folder / "u.item").write_text("10|A (1995)|01-Jan-1995||http://x|" + "|".join(
            ["0"] * 18 + ["1"]) + "\n")
        return lambda: load_ml100k(folder)
    return write


def ml100k_atomic(inter: str) -> Writer:
    def write(tmp: Path) -> Load:
        folder = tmp / "ml-100k"
        folder.mkdir()
        (folder / "ml-100k.inter").write_text(
            "user_id:token\titem_id:token\trating:float\ttimestamp:float\n" + inter)
        (folder / "ml-100k.user").write_text(
            "user_id:token\tage:token\tgender:token\toccupation:token\tzip_code:token\n"
            "1\t24\tM\ttechnician\t85711\n")
        (folder / "ml-100k.item").write_text(
            "item_id:token\tmovie_title:token_seq\trelease_year:token\tclass:token_seq\n"
            "10\tA\t1995\tDrama\n")
        return lambda: load_ml100k(folder)
    return write


def synthetic_spec(spec: str) -> Writer:
    return lambda tmp: (lambda: load_dataset(spec))


# --------------------------------------------------------------------------- bad inputs


@dataclass(frozen=True)
class Bad:
    write: Writer
    fragment: str
    release: tuple[str, int] | None = None  # treat the fixture as this release, this size
    names_path: bool = True  # the message names the file the user gave


GOOD_DAT = f"1::10::4::{ML1M_TS}\n2::10::3::{ML1M_TS + 1}\n"
BIG = "99999999999999999999"  # > 2^63

BAD: dict[str, Bad] = {
    # ids that cannot be represented exactly
    "ml-1m id beyond int64": Bad(ml1m(f"{BIG}::10::4::{ML1M_TS}\n"),
                                 rf"line 1: column 0: {BIG} does not fit in a 64-bit"),
    "ml-1m fractional id": Bad(ml1m(f"1.5::10::4::{ML1M_TS}\n"),
                               r"line 1: column 0 must be an integer id, got '1.5'"),
    "ml-1m id in exponent form": Bad(ml1m(f"1e30::10::4::{ML1M_TS}\n"),
                                     r"column 0 must be an integer id, got '1e30'"),
    "ml-20m id beyond int64": Bad(ml_csv("ml-20m", f"1,{BIG},4,{ML20M_TS}\n"),
                                  r"line 2: column 'movieId': 9+ does not fit"),
    "ml-100k id beyond int64": Bad(ml100k(f"{BIG}\t10\t4\t{ML100K_TS}\n"),
                                   r"u\.data: line 1: column 'user': 9+ does not fit"),
    "ml-100k atomic fractional id": Bad(ml100k_atomic(f"1\t10.5\t4\t{ML100K_TS}\n"),
                                        r"line 2: column 'item_id' must be an integer id"),
    "csv empty id": Bad(csv_file("user,item\n1,\n"), r"line 2: column 'item': empty item id"),
    # ratings that would count as interactions without meaning it
    "csv rating 0": Bad(csv_file("uid,iid,stars\n1,2,5\n1,3,0\n", "?user=uid&item=iid&"
                                 "rating=stars"),
                        r"line 3: column 'stars': rating 0 is not > 0.*adding threshold=T"),
    "csv negative rating": Bad(csv_file("1\t2\t-1\n"), r"line 1: column 3: rating -1 is not > 0"),
    "csv infinite rating": Bad(csv_file("user,item,rating\n1,2,inf\n"),
                               r"column 'rating' must be a finite number, got 'inf'"),
    "csv NaN rating": Bad(csv_file("user,item,rating\n1,2,nan\n"),
                          r"column 'rating' must be a finite number, got 'nan'"),
    "csv threshold without ratings": Bad(csv_file("user,item\n1,2\n", "?threshold=0"),
                                         "threshold=0.0 needs a rating column"),
    "ml-1m rating 0": Bad(ml1m(f"1::10::0::{ML1M_TS}\n"),
                          r"line 1: column 4: rating 0 is outside MovieLens-1M's scale"),
    "ml-1m rating 6": Bad(ml1m(f"1::10::6::{ML1M_TS}\n"), r"rating 6 is outside .*1\.\.5"),
    "ml-1m half star": Bad(ml1m(f"1::10::3.5::{ML1M_TS}\n"), r"rating 3\.5 is outside"),
    "ml-10m rating 0": Bad(ml10m(f"1::10::0::{ML20M_TS}\n"),
                           r"rating 0 is outside MovieLens-10M's scale \(half stars"),
    "ml-25m negative rating": Bad(ml_csv("ml-25m", f"1,2,-0.5,{ML20M_TS}\n"),
                                  r"line 2: column 'rating': rating -0\.5 is outside"),
    "ml-100k rating 0": Bad(ml100k(f"1\t10\t0\t{ML100K_TS}\n"), r"rating 0 is outside"),
    # files cut short: at a line boundary, in the middle of a number, in the middle of a line
    "ml-1m cut at a line boundary": Bad(ml1m(GOOD_DAT), r"MovieLens-1M has 3 ratings, found 2",
                                        release=("ml-1m", 3)),
    "ml-1m cut mid-timestamp": Bad(ml1m(GOOD_DAT + "3::10::5::97830"),
                                   r"line 3: column 6: timestamp 97830 lies outside "
                                   r"MovieLens-1M's span", release=("ml-1m", 3)),
    "ml-1m cut mid-line": Bad(ml1m(GOOD_DAT + "3::1"), r"line 3: expected UserID::MovieID"),
    "ml-10m cut mid-timestamp": Bad(ml10m(f"1::10::4::{ML20M_TS}\n2::10::4::11124"),
                                    r"timestamp 11124 lies outside", release=("ml-10m", 2)),
    "ml-20m cut at a line boundary": Bad(ml_csv("ml-20m", f"1,2,4,{ML20M_TS}\n"),
                                         r"MovieLens-20M has 2 ratings, found 1",
                                         release=("ml-20m", 2)),
    "ml-100k cut mid-timestamp": Bad(ml100k(f"1\t10\t4\t{ML100K_TS}\n1\t11\t4\t8812"),
                                     r"timestamp 8812 lies outside", release=("ml-100k", 2)),
    "ml-100k atomic cut at a line boundary": Bad(ml100k_atomic(f"1\t10\t4\t{ML100K_TS}\n"),
                                                 r"has 2 ratings, found 1",
                                                 release=("ml-100k", 2)),
    # not text, or not a file
    "csv gzip": Bad(csv_file(gzip.compress(b"user,item\n1,2\n"), name="r.csv.gz"),
                    r"gzip archive, not a text file; extract it first"),
    "csv zip": Bad(lambda tmp: (_zip(tmp), lambda: load_dataset(f"csv:{tmp / 'r.zip'}"))[1],
                   r"zip archive"),
    "csv binary": Bad(csv_file(b"\x00\x01\x02user,item\n"), "binary file"),
    "csv folder": Bad(lambda tmp: lambda: load_dataset(f"csv:{tmp}"), "is a folder"),
    "csv empty": Bad(csv_file(""), "file is empty"),
    "csv header only": Bad(csv_file("user,item\n"), "no interactions found"),
    "csv timestamp out of range": Bad(csv_file("user,item,timestamp\n1,2,1e30\n"),
                                      r"timestamp 1e30 is out of range"),
    # the dataset spec's options
    "csv unknown option": Bad(csv_file("user,item\n1,2\n", "?usr=x"),
                              r"option 'usr=x' is not KEY=VALUE"),
    "csv unknown column": Bad(csv_file("user,item\n1,2\n", "?user=uid"),
                              r"user=uid: no such column; the header has \['user', 'item'\]"),
    "csv column out of range": Bad(csv_file("1,2\n", "?user=1&item=9"),
                                   r"item=9: the file has 2 columns"),
    "csv one column for two roles": Bad(csv_file("a,b\n1,2\n", "?user=a&item=a"),
                                        r"user= and item= name the same column"),
    "csv bad threshold": Bad(csv_file("1,2,3\n", "?threshold=high"),
                             r"threshold='high' must be a number"),
    "csv bad separator": Bad(csv_file("1,2,3\n", "?sep=ab"), r"sep='ab' must be one of"),
    "csv option twice": Bad(csv_file("1,2,3\n", "?user=1&user=2"), r"'user' is given twice"),
    # sizes that cannot fit
    "synthetic beyond memory": Bad(synthetic_spec("synthetic-100000000x1000000"),
                                   r"needs about [\d,.]+ GiB of memory, this machine has "
                                   r"[\d,.]+ GiB", names_path=False),
}


def _zip(tmp: Path) -> None:
    with zipfile.ZipFile(tmp / "r.zip", "w") as z:
        z.writestr("r.csv", "user,item\n1,2\n")


@pytest.mark.parametrize("case", BAD.values(), ids=BAD.keys())
def test_bad_input_is_a_clear_data_error(case: Bad, tmp_path, as_release):
    if case.release:
        as_release(*case.release)
    load = case.write(tmp_path)
    with pytest.raises(DataError, match=case.fragment) as e:
        load()
    if case.names_path:
        assert str(tmp_path) in str(e.value)


# --------------------------------------------------------------------------- odd but valid


PLAIN = "user,item,rating,timestamp\n1,10,4,881250949\n1,3,2,881250950\n7,3,5,891717742\n"
ROWS = [line.split(",") for line in PLAIN.splitlines()[1:]]

GOOD: dict[str, Writer] = {
    "plain": csv_file(PLAIN),
    "UTF-8 byte-order mark": csv_file(codecs.BOM_UTF8 + PLAIN.encode()),
    "UTF-16 with a byte-order mark": csv_file(PLAIN.encode("utf-16")),
    "CRLF line ends": csv_file(PLAIN.replace("\n", "\r\n")),
    "quoted fields": csv_file("\n".join(",".join(f'"{f}"' for f in line.split(","))
                                        for line in PLAIN.splitlines()) + "\n"),
    "blanks around fields": csv_file(PLAIN.replace(",", " , ")),
    "trailing blank lines": csv_file(PLAIN + "\n\n"),
    "rows in another order": csv_file("user,item,rating,timestamp\n"
                                      + "".join(",".join(r) + "\n" for r in ROWS[::-1])),
    "columns named in the spec": csv_file(
        "uid;iid;stars;ts\n" + "".join(";".join(r) + "\n" for r in ROWS),
        "?user=uid&item=iid&rating=stars&timestamp=ts"),
    "headerless, columns by position": csv_file(
        "".join(f"{r[3]}\t{r[2]}\t{r[1]}\t{r[0]}\n" for r in ROWS),
        "?header=no&sep=tab&user=4&item=3&rating=2&timestamp=1"),
    "extra columns ignored": csv_file("userId,movieId,genre,rating,timestamp\n"
                                      + "".join(f"{r[0]},{r[1]},x,{r[2]},{r[3]}\n"
                                                for r in ROWS)),
}


@pytest.mark.parametrize("write", GOOD.values(), ids=GOOD.keys())
def test_odd_but_valid_files_give_the_plain_data(write: Writer, tmp_path):
    plain = csv_file(PLAIN, name="plain.csv")(tmp_path)()
    ds = write(tmp_path)()
    assert ds.content_sha256() == plain.content_sha256()
    assert ds.name == plain.name  # named by content: identical streams
    assert list(ds.user_ids) == [1, 7] and ds.user_ids.dtype == np.int64


# --------------------------------------------------------------------------- ids read exactly


_IDS = st.one_of(st.integers(0, 1000), st.integers(10**16, 10**17),
                 st.integers(2**62, 2**63 - 1))


def _id_files(tmp: Path, users: list[int]) -> dict[str, Load]:
    """One interaction per user (item 10), in every loader's format."""
    n = len(users)
    ts = [ML1M_TS + k for k in range(n)]
    (tmp / "ml-1m").mkdir()
    (tmp / "ml-1m" / "ratings.dat").write_text(
        "".join(f"{u}::10::4::{t}\n" for u, t in zip(users, ts, strict=True)))
    (tmp / "ml-25m").mkdir()
    (tmp / "ml-25m" / "ratings.csv").write_text("userId,movieId,rating,timestamp\n" + "".join(
        f"{u},10,4,{t}\n" for u, t in zip(users, ts, strict=True)))
    (tmp / "r.csv").write_text("user,item\n" + "".join(f"{u},10\n" for u in users))
    ml100k("".join(f"{u}\t10\t4\t{ML100K_TS + k}\n" for k, u in enumerate(users)))(tmp)
    return {
        "ml-1m": lambda: load_ml1m(tmp / "ml-1m"),
        "ml-25m": lambda: load_movielens_csv(tmp / "ml-25m"),
        "csv": lambda: load_csv(tmp / "r.csv"),
        "ml-100k": lambda: load_ml100k(tmp / "ml-100k"),
    }


@pytest.mark.usefixtures("no_releases")
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(users=st.lists(_IDS, min_size=1, max_size=40, unique=True))
def test_every_loader_reads_integer_ids_exactly(users):
    """Before: ids went through float64, so 17-digit ids merged (60 users became 30)."""
    with tempfile.TemporaryDirectory() as d:
        for fmt, load in _id_files(Path(d), users).items():
            ds = load()
            assert ds.user_ids.dtype == np.int64, fmt
            assert ds.user_ids.tolist() == sorted(users), fmt


def test_seventeen_digit_ids_stay_distinct(tmp_path):
    """The tester's case: 60 users with 17-digit ids, consecutive so that floats merge them."""
    base = 12_345_678_901_234_560
    p = tmp_path / "r.csv"
    p.write_text("user,item\n" + "".join(f"{base + k},{k % 7}\n" for k in range(60)))
    assert float(base) == float(base + 1)  # what went wrong before
    assert load_csv(p).n_users == 60


@given(ids=st.lists(st.integers(10**29, 10**31), min_size=2, max_size=20, unique=True))
@settings(max_examples=20, deadline=None)
def test_csv_ids_beyond_int64_are_kept_as_text(ids):
    """Before: ids near 1e30 collapsed to 2 users. Now the text is the id."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "r.csv"
        p.write_text("user,item\n" + "".join(f"{u},1\n" for u in ids))
        ds = load_csv(p)
    assert ds.n_users == len(ids)
    assert sorted(ds.user_ids.tolist()) == sorted(map(str, ids))


@given(a=st.integers(0, 999), zeros=st.integers(1, 3))
@settings(max_examples=20, deadline=None)
def test_csv_ids_written_two_ways_are_two_ids(a, zeros):
    """``007`` and ``7`` are different text: not merged through a number."""
    padded = "0" * zeros + str(a)
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "r.csv"
        p.write_text(f"user,item\n{a},1\n{padded},1\n")
        ds = load_csv(p)
    assert sorted(ds.user_ids.tolist()) == sorted([str(a), padded])


# --------------------------------------------------------------------------- ratings <= 0


@given(r=st.floats(-1e6, 0.0))
@settings(max_examples=30, deadline=None)
def test_dataset_refuses_ratings_that_are_not_positive(r):
    with pytest.raises(DataError, match=r"ratings must be > 0"):
        Dataset.from_triples("x", np.array([0, 1]), np.array([0, 0]), np.array([3.0, r]))


def test_csv_threshold_binarises_explicitly(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text("user,item,rating\n1,1,0\n1,2,4\n2,1,-1\n3,2,5\n")
    ds = load_dataset(f"csv:{p}?threshold=3")
    assert ds.history == (f"source: file {p.resolve()}", "binarise(rating>3)")
    assert ds.n_users == 3 and ds.n_interactions == 2  # user 2 kept, with no interactions
    assert ds.matrix.data.tolist() == [1.0, 1.0]
    users, items, _ = ds.triples()
    assert [(ds.user_ids[u], ds.item_ids[i]) for u, i in zip(users, items, strict=True)] == [
        (1, 2), (3, 2)]


# --------------------------------------------------------------------------- content naming


def test_same_file_at_two_paths_gives_the_same_name_and_streams(tmp_path):
    """Before: the name held the path, and evaluation streams derive from the name."""
    text = "user,item,rating\n1,1,4\n1,2,5\n2,1,3\n"
    (tmp_path / "a").mkdir()
    (tmp_path / "b" / "deeper").mkdir(parents=True)
    (tmp_path / "a" / "ratings.csv").write_text(text)
    (tmp_path / "b" / "deeper" / "copy.csv").write_text(text)
    a = load_dataset(f"csv:{tmp_path / 'a' / 'ratings.csv'}")
    b = load_dataset(f"csv:{tmp_path / 'b' / 'deeper' / 'copy.csv'}")
    assert a.name == b.name
    assert a.history != b.history  # each records its own path
    draws = [derive_generator(0, "split", d.name).random(4) for d in (a, b)]
    np.testing.assert_array_equal(*draws)
    (tmp_path / "a" / "ratings.csv").write_text(text.replace("2,1,3", "2,1,2"))
    assert load_dataset(f"csv:{tmp_path / 'a' / 'ratings.csv'}").name != b.name


# --------------------------------------------------------------------------- memory


def test_synthetic_refuses_what_cannot_fit_with_the_numbers(monkeypatch):
    monkeypatch.setattr(synthetic_module, "machine_memory", lambda: 1 << 30)
    need = synthetic_module.memory_estimate(200_000, 5_000, 100_000_000)
    assert need > 1 << 30
    with pytest.raises(DataError, match=r"needs about [\d,.]+ GiB of memory, "
                                        r"this machine has 1\.0 GiB"):
        load_dataset("synthetic-200000x5000-100000000")
    ds = load_dataset("synthetic-300x100-3000")  # what fits still works under the limit
    assert ds.n_interactions == 3000

