"""SOZ labels: contact shorthand, subject ids, clinical spreadsheet, user tables, channel matching."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from sss_viewer.io.soz_labels import (
    channel_key,
    expand_contacts,
    match_soz,
    normalise_subject_id,
    read_clinical_summary,
    read_soz_table,
    write_clinical_summary,
)
from tests.fixtures.recordings import DS003029_META


def real_channel_names(subject: str) -> list[str]:
    """Channel names of run-01 of ``subject`` from its real ``channels.tsv``."""
    root = DS003029_META
    (path,) = sorted((root / f"sub-{subject}").glob("ses-*/ieeg/*run-01_channels.tsv"))
    return pd.read_csv(path, sep="\t", dtype={"name": str}, keep_default_na=False)["name"].tolist()


# ---------------------------------------------------------------------------- expand_contacts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("AD1-4, ATT1,2", ["AD1", "AD2", "AD3", "AD4", "ATT1", "ATT2"]),
        ("TT1-6; AST1-2, mst1-2", ["TT1", "TT2", "TT3", "TT4", "TT5", "TT6", "AST1", "AST2", "mst1", "mst2"]),
        ("X1-X4", ["X1", "X2", "X3", "X4"]),
        ("x1 - X3", ["x1", "x2", "x3"]),
        ("LAT8-10, 13-15, 19", ["LAT8", "LAT9", "LAT10", "LAT13", "LAT14", "LAT15", "LAT19"]),
        ("G1,2,3\nPD 1-2", ["G1", "G2", "G3", "PD1", "PD2"]),
        ("RA1:RA2 RH3\tRH4", ["RA1", "RA2", "RH3", "RH4"]),
        ("AST1, PST1/2", ["AST1", "PST1", "PST2"]),
        ("A'1-3, B'2", ["A'1", "A'2", "A'3", "B'2"]),
        ("A\u20192", ["A'2"]),
        ("ATT01-03", ["ATT01", "ATT02", "ATT03"]),
        ("AD1-4, ad2, AD03, AD1", ["AD1", "AD2", "AD3", "AD4"]),
        ("PT3', FPZ", ["PT3'", "FPZ"]),
        ("AD2-2", ["AD2"]),
        ("", []),
        ("   ", []),
        ("n/a", []),
        ("None", []),
        ("?", []),
    ],
)
def test_expand_contacts(text, expected):
    assert expand_contacts(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("AD4-1", "reversed range 'AD4-1'"),
        ("ATT1, 4-2", "reversed range '4-2'"),
        ("AD1-PD4", "spans two electrodes"),
        ("1,2", "'1' continues no electrode"),
        ("AD#1", "token 'AD#1' is not a contact"),
        ("AD1-", "token 'AD1-' is not a contact"),
        ("AD1-4-6", "token 'AD1-4-6' is not a contact"),
    ],
)
def test_expand_contacts_errors_name_the_text(text, message):
    with pytest.raises(ValueError, match=rf"Cannot parse SOZ contacts '{text}'.*{message}"):
        expand_contacts(text)


def test_expand_contacts_rejects_non_text():
    with pytest.raises(TypeError, match="must be text"):
        expand_contacts(float("nan"))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- match_soz


def test_channel_key_ignores_case_space_and_padding_only():
    assert channel_key(" att 01") == channel_key("ATT1") == "ATT1"
    assert channel_key("A'1") == "A'1" != channel_key("A1")
    assert channel_key("G10") != channel_key("G1")
    assert channel_key("G0") == channel_key("G00") == "G0"


def test_match_soz_marks_channels_and_reports_unmatched():
    ch_names = ["ATT1", "ATT2", "att3", "A'1", "A1", "G10", "$G11", "PT3'"]
    mask, unmatched = match_soz(ch_names, ["ATT01", "Att 2", "ATT3", "A'1", "G1", "G11", "PT3", "G1", "PT3'"])
    assert mask.dtype == bool and mask.shape == (8,)
    assert [c for c, m in zip(ch_names, mask, strict=True) if m] == ["ATT1", "ATT2", "att3", "A'1", "PT3'"]
    assert unmatched == ["G1", "G11", "PT3"]


def test_match_soz_empty_inputs():
    mask, unmatched = match_soz(["A1"], [])
    assert not mask.any() and unmatched == []
    mask, unmatched = match_soz([], ["A1"])
    assert mask.shape == (0,) and unmatched == ["A1"]


def test_match_soz_refuses_a_name_that_hits_two_channels():
    with pytest.raises(
        ValueError, match=r"labels\.tsv: SOZ label 'a1' is ambiguous: it matches 2 channels of sub-x \(A1, A01\)"
    ):
        match_soz(["A1", "A01", "B1"], ["a1"], source="labels.tsv", recording="sub-x")
    mask, _ = match_soz(["A1", "A01", "B1"], ["b1"])  # channels that share a name but are not named: no error
    assert mask.tolist() == [False, False, True]


# ---------------------------------------------------------------------------- subject ids


@pytest.mark.parametrize(
    ("dataset_id", "expected"),
    [
        ("pt1", "pt01"),
        ("PT01", "pt01"),
        ("pt2", "pt2"),
        ("pt02", "pt2"),
        ("ummc_001", "ummc001"),
        ("UMMC-009", "ummc009"),
        ("jh101", "jh101"),
        ("umf_5", "umf005"),
        ("pt99", None),
        ("la01", None),
        ("ummc", None),
    ],
)
def test_normalise_subject_id(dataset_id, expected):
    subjects = ["pt01", "pt2", "ummc001", "ummc009", "jh101", "umf005"]
    assert normalise_subject_id(dataset_id, subjects) == expected


def test_normalise_subject_id_keeps_bids_prefix_and_rejects_ambiguity():
    assert normalise_subject_id("pt1", ["sub-pt01"]) == "sub-pt01"
    assert normalise_subject_id("pt1", ["pt1", "pt01"]) == "pt1"
    with pytest.raises(ValueError, match="'pt001' matches several subjects"):
        normalise_subject_id("pt001", ["pt1", "pt01"])


def test_spreadsheet_ids_map_to_every_real_subject():
    root = DS003029_META
    subjects = pd.read_csv(root / "participants.tsv", sep="\t")["participant_id"].str.removeprefix("sub-").tolist()
    spreadsheet_style = {s: s.replace("ummc", "ummc_").replace("pt0", "pt") for s in subjects}
    assert len(subjects) == 35
    for subject, dataset_id in spreadsheet_style.items():
        assert normalise_subject_id(dataset_id, subjects) == subject


# ---------------------------------------------------------------------------- clinical spreadsheet


def summary_rows() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "dataset_id": ["pt1", "ummc_001", "la01", "jh101"],
            "soz_contacts": ["AD1-4, ATT1,2, PD1-4", "TT1-6; AST1-2, mst1-2", "A'1-2", None],
            "engel_score": [1, 2, 1, np.nan],
            "ilae_score": [1, 3, 2, np.nan],
            "outcome": ["S", "F", "S", "NR"],
            "surgery_type": ["resection", "laser ablation", "resection", "none"],
            "clinical_center": ["nih", "ummc", "cc", "jhh"],
        }
    )


def test_clinical_summary_round_trip(tmp_path):
    path = write_clinical_summary(summary_rows(), tmp_path / "clinical_data_summary.xlsx")
    summary = read_clinical_summary(path)
    assert list(summary.columns) == [
        "subject",
        "dataset_id",
        "soz_contacts",
        "outcome",
        "engel_score",
        "ilae_score",
        "centre",
        "surgery_type",
    ]
    assert summary["subject"].tolist() == summary["dataset_id"].tolist() == ["pt1", "ummc_001", "la01", "jh101"]
    assert summary["soz_contacts"].tolist() == [
        ["AD1", "AD2", "AD3", "AD4", "ATT1", "ATT2", "PD1", "PD2", "PD3", "PD4"],
        ["TT1", "TT2", "TT3", "TT4", "TT5", "TT6", "AST1", "AST2", "mst1", "mst2"],
        ["A'1", "A'2"],
        [],
    ]
    assert summary["centre"].tolist() == ["nih", "ummc", "cc", "jhh"]
    assert summary["engel_score"].tolist()[:3] == [1, 2, 1] and np.isnan(summary["engel_score"][3])


def test_clinical_summary_maps_ids_to_subjects(tmp_path, caplog):
    path = write_clinical_summary(summary_rows(), tmp_path / "summary.xlsx")
    with caplog.at_level(logging.INFO, logger="sss_viewer.io.soz_labels"):
        summary = read_clinical_summary(path, subjects=["pt01", "ummc001", "jh101", "pt2"])
    assert summary["subject"].tolist() == ["pt01", "ummc001", "jh101"]
    assert summary["dataset_id"].tolist() == ["pt1", "ummc_001", "jh101"]
    assert "la01" in caplog.text


def test_write_clinical_summary_joins_lists_and_keeps_required_first(tmp_path):
    rows = pd.DataFrame({"outcome": ["S"], "soz_contacts": [["AD1", "AD2"]], "dataset_id": ["pt1"]})
    path = write_clinical_summary(rows, tmp_path / "s.xlsx")
    raw = pd.read_excel(path)
    assert list(raw.columns) == ["dataset_id", "soz_contacts", "outcome"]
    assert raw["soz_contacts"].tolist() == ["AD1, AD2"]
    with pytest.raises(ValueError, match=r"rows lack columns \['soz_contacts'\]"):
        write_clinical_summary(pd.DataFrame({"dataset_id": ["pt1"]}), tmp_path / "t.xlsx")
    with pytest.raises(ValueError, match="expected a .xlsx"):
        write_clinical_summary(rows, tmp_path / "t.csv")


def test_clinical_summary_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.xlsx"):
        read_clinical_summary(tmp_path / "missing.xlsx")
    garbage = tmp_path / "garbage.xlsx"
    garbage.write_bytes(b"this is not a workbook")
    with pytest.raises(ValueError, match="garbage.xlsx could not be read as an Excel workbook"):
        read_clinical_summary(garbage)
    no_soz = tmp_path / "no_soz.xlsx"
    pd.DataFrame({"dataset_id": ["pt1"], "outcome": ["S"]}).to_excel(no_soz, index=False)
    with pytest.raises(ValueError, match=r"no_soz.xlsx lacks columns \['soz_contacts'\]"):
        read_clinical_summary(no_soz)


def test_clinical_summary_bad_rows_are_named(tmp_path):
    bad = write_clinical_summary(
        pd.DataFrame({"dataset_id": ["pt1", "pt2"], "soz_contacts": ["AD1-4", "AD4-1"]}), tmp_path / "bad.xlsx"
    )
    with pytest.raises(ValueError, match=r"bad.xlsx, row 3 \(dataset_id 'pt2'\).*reversed range"):
        read_clinical_summary(bad)
    no_id = write_clinical_summary(
        pd.DataFrame({"dataset_id": ["pt1", None], "soz_contacts": ["AD1", "AD2"]}), tmp_path / "no_id.xlsx"
    )
    with pytest.raises(ValueError, match=r"no_id.xlsx: rows \[3\] have no dataset_id"):
        read_clinical_summary(no_id)
    twice = write_clinical_summary(
        pd.DataFrame({"dataset_id": ["pt1", "pt01"], "soz_contacts": ["AD1", "AD2"]}), tmp_path / "twice.xlsx"
    )
    with pytest.raises(ValueError, match="several rows map to the same subject"):
        read_clinical_summary(twice, subjects=["pt01"])


# ---------------------------------------------------------------------------- user SOZ tables


@pytest.mark.parametrize(("suffix", "sep"), [(".tsv", "\t"), (".csv", ","), (".txt", "\t")])
def test_read_soz_table(tmp_path, suffix, sep):
    lines = ["subject,channel,soz", "pt01,ATT1,1", "pt01, AD2 ,TRUE", "pt01,G1,0", "pt01,G2,false", "pt01,ATT1,1"]
    path = tmp_path / f"labels{suffix}"
    path.write_text("\n".join(line.replace(",", sep) for line in lines) + "\n")
    table = read_soz_table(path)
    assert list(table.columns) == ["subject", "channel", "soz"]
    assert table["channel"].tolist() == ["ATT1", "AD2", "G1", "G2"]
    assert table["soz"].tolist() == [True, True, False, False]
    assert table["soz"].dtype == bool


def test_read_soz_table_keeps_leading_zero_subjects(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("subject,channel,soz\n007,A'1,1\n")
    table = read_soz_table(path)
    assert table["subject"].tolist() == ["007"] and table["channel"].tolist() == ["A'1"]


def test_read_soz_table_errors_name_file_and_lines(tmp_path):
    with pytest.raises(ValueError, match=r"labels.xlsx: unknown SOZ table extension"):
        read_soz_table(tmp_path / "labels.xlsx")
    with pytest.raises(FileNotFoundError, match="nope.tsv"):
        read_soz_table(tmp_path / "nope.tsv")
    values = tmp_path / "values.csv"
    values.write_text("subject,channel,soz\npt01,A1,1\npt01,A2,yes\npt01,A3,2\n")
    with pytest.raises(ValueError, match=r"values.csv: soz must be 0, 1, true or false; lines \[3, 4\]"):
        read_soz_table(values)
    columns = tmp_path / "columns.tsv"
    columns.write_text("subject\tname\tsoz\npt01\tA1\t1\n")
    with pytest.raises(ValueError, match=r"columns.tsv lacks columns \['channel'\]"):
        read_soz_table(columns)
    empty = tmp_path / "empty.csv"
    empty.write_text("subject,channel,soz\npt01,,1\n")
    with pytest.raises(ValueError, match=r"empty.csv: lines \[2\] have an empty subject or channel"):
        read_soz_table(empty)
    conflict = tmp_path / "conflict.csv"
    conflict.write_text("subject,channel,soz\npt01,A1,1\npt01,B1,0\npt01,a01,0\n")
    with pytest.raises(ValueError, match=r"conflict.csv: lines \[2, 4\] give the same channel both soz values"):
        read_soz_table(conflict)
    blank = tmp_path / "blank.tsv"
    blank.write_text("")
    with pytest.raises(ValueError, match="blank.tsv is empty"):
        read_soz_table(blank)


# ---------------------------------------------------------------------------- real channel names


@pytest.mark.parametrize(
    ("subject", "soz_text", "n_matched", "unmatched"),
    [
        # pt01's clinical SOZ (also the EZFragility labels): 10 ECoG/depth contacts
        ("pt01", "AD1-4, ATT1,2, PD1-4", 10, []),
        ("pt12", "TT1-6; AST1-2, mst1-2", 10, []),
        # SEEG (UMF): depth electrodes LA and LH
        ("umf004", "LA1-4, LH1,2\nLH3", 7, []),
        # the real channel is "PT3'" (with an apostrophe): PT3 must not match it
        ("pt14", "PT1-4", 3, ["PT3"]),
        ("pt14", "PT1,2, PT3', PT4", 4, []),
        # "$LAF9"/"$LAF10" are other channels than LAF9/LAF10; "DC1" matches the zero-padded "DC01"
        ("jh101", "LAF9-10, DC1", 3, []),
        ("jh103", "RAD1-3, RHD1-2, XYZ1", 5, ["XYZ1"]),
    ],
)
def test_realistic_soz_matches_real_channel_names(subject, soz_text, n_matched, unmatched):
    ch_names = real_channel_names(subject)
    mask, missing = match_soz(ch_names, expand_contacts(soz_text))
    assert mask.shape == (len(ch_names),)
    assert int(mask.sum()) == n_matched
    assert missing == unmatched


def test_pt01_soz_channels_are_exactly_the_ten_named():
    ch_names = real_channel_names("pt01")
    mask, _ = match_soz(ch_names, expand_contacts("AD1-4, ATT1,2, PD1-4"))
    assert sorted(np.asarray(ch_names)[mask]) == sorted(
        ["AD1", "AD2", "AD3", "AD4", "ATT1", "ATT2", "PD1", "PD2", "PD3", "PD4"]
    )
