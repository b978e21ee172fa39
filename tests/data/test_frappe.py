"""The Frappe loader and its registry entry, on a tiny frappe.csv/meta.csv written here."""

from __future__ import annotations

import numpy as np
import pytest

from dprec.data.features import side_features
from dprec.data.loaders import FRAPPE_COLUMNS, load_frappe
from dprec.data.registry import KNOWN_DATASETS, load_dataset
from dprec.errors import DataError

HEADER = "\t".join(FRAPPE_COLUMNS)
# user item cnt daytime weekday isweekend homework cost weather country city
ROWS = [
    (0, 10, 3, "morning", "sunday", "weekend", "home", "free", "sunny", "Spain", 5),
    (0, 10, 7, "evening", "sunday", "weekend", "home", "free", "sunny", "Spain", 5),
    (0, 11, 1, "evening", "monday", "workday", "work", "paid", "cloudy", "Spain", 12),
    (1, 10, 2, "night", "friday", "workday", "unknown", "free", "rainy", "Germany", 3),
    (1, 12, 61, "noon", "saturday", "weekend", "home", "free", "unknown", "Germany", 3),
    (2, 11, 5, "morning", "monday", "workday", "work", "paid", "sunny", "Spain", 5),
    (3, 12, 1, "sunset", "tuesday", "workday", "home", "free", "sunny", "France", 10),
    (3, 13, 1, "sunset", "tuesday", "workday", "home", "paid", "sunny", "France", 9),
    (1, 13, 4, "noon", "friday", "workday", "home", "free", "rainy", "Germany", 3),
]
META = ("item\tpackage\tcategory\tdownloads\tdeveloper\ticon\tlanguage\tdescription\tname\t"
        "price\trating\tshort desc\n"
        "10\tcom.whatsapp\tCommunication\t1000000\tWhatsApp\thttp://i\ten\tChat\tWhatsApp\t"
        "Free\t4.4\tchat\n"
        "11\tcom.x\tunknown\tunknown\tunknown\tunknown\tunknown\tunknown\tX\tunknown\t"
        "unknown\tunknown\n"
        "12\tcom.game\tGames\t500\tStudio\thttp://g\ten\tA game\tGame\t$0.99\t3.9\tfun\n"
        "99\tcom.unused\tTools\t1\tNobody\thttp://u\ten\tUnused\tUnused\tFree\t1.0\tnone\n")


def write_frappe(folder, rows=ROWS, meta=True, header=HEADER):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "frappe.csv").write_text(
        header + "\n" + "".join("\t".join(map(str, r)) + "\n" for r in rows))
    if meta:
        (folder / "meta.csv").write_text(META)
    return folder


def test_interactions(tmp_path):
    folder = write_frappe(tmp_path / "frappe")
    ds = load_frappe(folder)
    assert ds.name == "frappe"
    assert ds.history == (f"source: {folder.resolve()}",)
    assert list(ds.user_ids) == [0, 1, 2, 3] and list(ds.item_ids) == [10, 11, 12, 13]
    users, items, ratings = ds.triples()
    got = {(int(ds.user_ids[u]), int(ds.item_ids[i])): float(r)
           for u, i, r in zip(users, items, ratings, strict=True)}
    # (0, 10) is logged twice: the last row of the file (cnt 7) is kept
    assert got == {(0, 10): 7.0, (0, 11): 1.0, (1, 10): 2.0, (1, 12): 61.0, (1, 13): 4.0,
                   (2, 11): 5.0, (3, 12): 1.0, (3, 13): 1.0}
    assert ds.timestamps is None
    # the file itself and the parent folder work too
    assert (load_frappe(folder / "frappe.csv").matrix != ds.matrix).nnz == 0
    assert (load_frappe(tmp_path).matrix != ds.matrix).nnz == 0


def test_user_features_are_per_user_modes(tmp_path):
    uf = load_frappe(write_frappe(tmp_path)).user_features
    assert list(uf.columns) == ["daytime", "weekday", "isweekend", "homework", "weather",
                                "country", "city"]
    assert uf.loc[0].tolist() == ["evening", "sunday", "weekend", "home", "sunny", "Spain", 5]
    # user 1: night/noon/noon, friday/saturday/friday, unknown/home/home,
    # rainy/unknown/rainy; isweekend workday 2 : weekend 1
    assert uf.loc[1].tolist() == ["noon", "friday", "workday", "home", "rainy", "Germany", 3]
    assert uf.loc[2].tolist() == ["morning", "monday", "workday", "work", "sunny", "Spain", 5]
    # user 3: city 10 and 9 once each; the tie goes to the smallest number (9, not "10")
    assert uf.loc[3, "city"] == 9
    assert uf["city"].dtype == np.int64


def test_ties_go_to_the_smallest_value(tmp_path):
    rows = [(5, 1, 1, "night", "friday", "workday", "unknown", "paid", "rainy", "Spain", 1),
            (5, 2, 1, "noon", "saturday", "weekend", "home", "free", "unknown", "Italy", 2),
            (6, 2, 1, "noon", "saturday", "weekend", "home", "free", "None", "NA", 2)]
    uf = load_frappe(write_frappe(tmp_path, rows=rows, meta=False)).user_features
    assert uf.loc[5].tolist() == ["night", "friday", "weekend", "home", "rainy", "Italy", 1]
    # pandas' default NA strings are values here (Namibia is "NA")
    assert uf.loc[6, ["weather", "country"]].tolist() == ["None", "NA"]


def test_item_features(tmp_path):
    itf = load_frappe(write_frappe(tmp_path)).item_features
    assert list(itf.columns) == ["cost", "category"]
    # item 13: free once, paid once -> free
    assert itf["cost"].tolist() == ["free", "paid", "free", "free"]
    assert itf.loc[10, "category"] == "Communication"
    assert itf.loc[12, "category"] == "Games"
    assert itf["category"].isna().tolist() == [False, True, False, True]  # unknown; not in meta


def test_without_meta(tmp_path):
    ds = load_frappe(write_frappe(tmp_path, meta=False))
    assert list(ds.item_features.columns) == ["cost"]
    assert ds.n_interactions == 8
    sf = side_features(ds)
    assert sf.items.categorical_names == ("cost",)


def test_side_features_defaults(tmp_path):
    ds = load_frappe(write_frappe(tmp_path))
    sf = side_features(ds)
    u, it = sf.users, sf.items
    assert u.categorical_names == ("daytime", "weekday", "isweekend", "homework", "weather",
                                   "country", "city")
    assert u.numeric.shape == (4, 0) and u.multi_hot.shape == (4, 0)
    # city modes 5, 3, 5, 9 -> codes by numeric order 3 < 5 < 9
    np.testing.assert_array_equal(u.categorical[:, 6], [2, 1, 2, 3])
    assert u.cardinalities[6] == 4
    assert it.categorical_names == ("cost", "category")
    assert it.cardinalities == (3, 3)  # free, paid; Communication, Games (+ 0 each)
    np.testing.assert_array_equal(it.categorical, [[1, 1], [2, 0], [1, 2], [1, 0]])
    assert sf.describe()["items"]["categorical"] == {"cost": 3, "category": 3}


@pytest.mark.parametrize(("rows", "header", "message"), [
    ([(0, 10, -2, *ROWS[0][3:])], HEADER,
     r"frappe\.csv: line 2: column 'cnt': cnt -2 is not >= 1"),
    ([ROWS[0], (0, 11, 0, *ROWS[0][3:])], HEADER,
     r"frappe\.csv: line 3: column 'cnt': cnt 0 is not >= 1"),
    ([(0, 10, "2.5", *ROWS[0][3:])], HEADER,
     r"frappe\.csv: line 2: column 'cnt' must be an integer count, got '2\.5'"),
    ([ROWS[0], ("x7", 10, 1, *ROWS[0][3:])], HEADER,
     r"frappe\.csv: line 3: column 'user' must be an integer id, got 'x7'"),
    ([(0, "", 1, *ROWS[0][3:])], HEADER, r"line 2: column 'item' must be an integer id"),
    ([(0, 10, 1, "", *ROWS[0][4:])], HEADER,
     r"line 2: column 'daytime': empty value; Frappe writes a missing context as 'unknown'"),
    ([r[:-1] for r in ROWS], HEADER.rsplit("\t", 1)[0],
     r"frappe\.csv: missing column\(s\) \['city'\]; header has \['user', 'item'"),
    ([], HEADER, r"frappe\.csv: no interactions found"),
    ([ROWS[0], ROWS[1][:5]], HEADER, r"frappe\.csv: line 3: column 'isweekend': empty value"),
    ([ROWS[0], (*ROWS[1], "extra")], HEADER, r"frappe\.csv: cannot parse"),
])
def test_corrupt_frappe(tmp_path, rows, header, message):
    folder = write_frappe(tmp_path, rows=rows, header=header)
    with pytest.raises(DataError, match=message):
        load_frappe(folder)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(DataError, match="nowhere: no such file or directory"):
        load_frappe(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="empty: no frappe.csv found here or in frappe"):
        load_frappe(tmp_path / "empty")
    folder = write_frappe(tmp_path / "f")
    (folder / "frappe.csv").write_text("")
    with pytest.raises(DataError, match=r"frappe\.csv: file is empty"):
        load_frappe(folder)
    (folder / "frappe.csv").write_text("user,item,cnt\n1,2,3\n")  # comma-separated
    with pytest.raises(DataError, match=r"missing column\(s\) \['user', 'item', 'cnt'"):
        load_frappe(folder)


def test_corrupt_meta(tmp_path):
    folder = write_frappe(tmp_path)
    (folder / "meta.csv").write_text("item\tpackage\n10\tcom.a\n")
    with pytest.raises(DataError, match=r"meta\.csv: missing column\(s\) \['category'\]"):
        load_frappe(folder)
    (folder / "meta.csv").write_text("item\tcategory\n10\tGames\n10\tTools\n")
    with pytest.raises(DataError, match=r"meta\.csv: line 3: column 'item': app 10 is listed "
                                        "twice"):
        load_frappe(folder)
    (folder / "meta.csv").write_text("item\tcategory\nten\tGames\n")
    with pytest.raises(DataError, match=r"meta\.csv: line 2: column 'item' must be an "
                                        "integer id"):
        load_frappe(folder)


def test_registry(tmp_path, monkeypatch):
    assert "frappe" in KNOWN_DATASETS
    monkeypatch.delenv("DPREC_DATA", raising=False)
    with pytest.raises(DataError, match=r"Frappe cannot be downloaded here; pass --data-dir "
                                        r"PATH pointing at the folder holding frappe\.csv .*"
                                        r"\(or set DPREC_DATA\)"):
        load_dataset("frappe")
    write_frappe(tmp_path / "frappe")
    ds = load_dataset("frappe", data_dir=tmp_path)
    assert (ds.name, ds.n_users, ds.n_items, ds.n_interactions) == ("frappe", 4, 4, 8)
    assert ds.history == (f"source: data-dir {(tmp_path / 'frappe').resolve()}",)
    monkeypatch.setenv("DPREC_DATA", str(tmp_path / "frappe"))
    assert load_dataset("Frappe").n_interactions == 8
    with pytest.raises(DataError, match=r"Frappe: no frappe\.csv in .*elsewhere.*; pass "
                                        "--data-dir PATH pointing at the folder holding"):
        load_dataset("frappe", data_dir=tmp_path / "elsewhere")
