"""The annotation model and sidecar store live below the viewer: they run without the ``[viewer]`` extra.

A subprocess with the viewer's libraries blocked (as if not installed) locates a recording's sidecars,
saves, merges a second session's save, reads the log and the backups, and reads the labels back as
the training labels do; the viewer's module re-exports the same objects for code that imported them there.
"""

import importlib
import json
import subprocess
import sys
import warnings

import pytest

from sss_viewer.io import _annotation_identity as annotation_identity
from sss_viewer.io import annotation_location, annotation_merge, annotation_model, annotation_store
from tests.foundation.test_architecture import VIEWER_LIBRARIES

_SCRIPT = r"""
import json, sys
from pathlib import Path
for name in {blocked}:
    sys.modules[name] = None  # as if not installed

import numpy as np

from sss_viewer.io.annotation_location import locate_sidecars
from sss_viewer.io.annotation_model import AnnotationSet, default_author, diff_annotations, make_marker
from sss_viewer.io.annotation_store import (
    load_annotations, read_annotations, read_log, recording_stem, sidecar_backups, sync_annotations,
)
from sss_viewer.io.recording import Recording
from sss_viewer.io.viewer_labels import apply_viewer_labels, find_channels_sidecar

root, out = Path(sys.argv[1]), Path(sys.argv[2])
source = root / "patA" / "rec.edf"
source.parent.mkdir(parents=True)
source.write_bytes(bytes(range(256)) * 64)  # only its bytes key the sidecars; it is never read as EEG
names = ["A1", "A2", "A3", "A4"]

def recording():
    return Recording(data=np.zeros((4, 2500), np.float32), sfreq=250.0, ch_names=list(names), ch_types=["seeg"] * 4,
                     subject="A", source=source)

rec = recording()
where = locate_sidecars(out, recording_stem(rec), rec, data_root=root)
first = AnnotationSet(markers=[make_marker(2.5, "onset", "sz", author="cli")], bad_channels=["A2"],
                      soz_labels={"A1": True, "A3": False})
sync_annotations(first, where.folder, where.stem, channel_names=names, identity=where.identity, author="cli",
                 edits=[diff_annotations(AnnotationSet(), first, author="cli")])
disk, seen = read_annotations(where.folder, where.stem, names)  # a second session reads, then both save
mine = AnnotationSet(markers=disk.markers, bad_channels=[*disk.bad_channels, "A4"], soz_labels=disk.soz_labels)
theirs = AnnotationSet(markers=[*disk.markers, make_marker(7.0, "note", "spikes")], bad_channels=disk.bad_channels,
                       soz_labels=disk.soz_labels)
sync_annotations(theirs, where.folder, where.stem, base=disk, seen=seen, channel_names=names, author="other",
                 edits=[diff_annotations(disk, theirs, author="other")])
merged = sync_annotations(mine, where.folder, where.stem, base=disk, seen=seen, channel_names=names, author="me",
                          edits=[diff_annotations(disk, mine, author="me")])
final = load_annotations(where.folder, where.stem, names)
labelled = recording()
summary = apply_viewer_labels([labelled], root, out)
print(json.dumps({
    "folder": where.folder.relative_to(out).as_posix(), "key": where.identity.key, "merged": merged.merged,
    "markers": [m["text"] for m in final.markers], "bad": final.bad_channels, "soz": final.soz_labels,
    "log": [e["action"] for e in read_log(where.folder, where.stem)],
    "backups": len(sidecar_backups(where.folder, where.stem)["channels"]),
    "sidecar": find_channels_sidecar(source, root, out).relative_to(out).as_posix(),
    "training_soz": labelled.soz.tolist(), "training_bads": labelled.bads, "labelled": summary["labelled"],
    "author": default_author("alice"),
    "loaded": sorted(m for m in sys.modules if m.split(".")[0] in {blocked} and sys.modules[m] is not None
                     or m.startswith("sss_viewer.viewer")),
}))
"""


def test_the_annotation_store_saves_merges_and_reads_labels_without_the_viewer_extra(tmp_path):
    code = _SCRIPT.replace("{blocked}", repr(VIEWER_LIBRARIES))
    args = [sys.executable, "-c", code, str(tmp_path / "data"), str(tmp_path / "out")]
    result = subprocess.run(args, check=False, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["loaded"] == []  # no viewer library and no viewer module was imported
    assert (out["folder"], out["key"], out["merged"]) == ("patA", "path", True)
    assert out["markers"] == ["sz", "spikes"]  # the other session's note survives this session's save
    assert out["bad"] == ["A2", "A4"] and out["soz"] == {"A1": True, "A3": False}
    assert out["log"] == [
        "add onset at 2.50 s — sz; mark A2 bad; A1: SOZ; A3: not SOZ",
        "add note at 7.00 s — spikes",
        "mark A4 bad",
        "merge from another session: add note at 7.00 s — spikes",
    ]
    assert out["backups"] == 2  # the files before the second and the third save
    assert out["sidecar"] == "patA/rec_desc-sssviewer_channels.tsv"  # where the training labels look
    assert out["training_soz"] == [True, False, False, False] and len(out["labelled"]) == 1
    assert sorted(out["training_bads"]) == ["A2", "A4"]  # bad marks leave training
    assert out["author"].startswith("alice#")


def test_the_viewer_module_re_exports_the_moved_names():
    viewer = importlib.import_module("sss_viewer.viewer._annotations")
    homes = (annotation_model, annotation_merge, annotation_store, annotation_location, annotation_identity)
    moved = [n for n in viewer.__all__ if n not in ("AnnotationPanel", "default_author")]
    assert len(moved) > 40
    for name in moved:
        home = next((m for m in homes if name in vars(m)), None)
        assert home is not None, f"{name} has no home below the viewer"
        assert getattr(viewer, name) is getattr(home, name), name


def test_the_old_identity_module_path_warns_and_names_the_new_one():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the module's own warning, once per process
        old = importlib.import_module("sss_viewer.viewer.annotation_identity")
    with pytest.warns(FutureWarning, match=r"moved to sss_viewer\.io\._annotation_identity\.recording_identity"):
        assert old.recording_identity is annotation_identity.recording_identity
