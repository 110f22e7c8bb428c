"""The output folder of one ``sss-viewer score`` run: refuses a used folder, clears its previous run by manifest."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from sss_viewer.commands._shared import _names
from sss_viewer.engine.score_files import SCORE_MANIFEST, write_csv

logger = logging.getLogger("sss_viewer")  # the name cli.py logs under: messages read as before


SCORE_OUTPUTS = ("windows.csv", "channels.csv", "excluded.csv")
"""The files ``score`` writes per recording."""


class ScoreOutput:
    """The output folder of one ``score`` run: refuses a used folder, clears its previous run, lists what it writes.

    Rules: ``--overwrite`` removes only the files a previous run's manifest (``sss-viewer-score.json``)
    lists, never files found by name; a non-empty folder without a manifest is refused, naming what is
    there. The previous run is removed only when the new results are ready (at the first
    :meth:`write`, after the input and model were read and scored), so a failing new run leaves
    the previous one whole.

    Parameters
    ----------
    root : Path
        The ``--out`` folder.
    overwrite : bool
        A non-empty folder is refused unless True and it holds a previous run's manifest.
    """

    def __init__(self, root: Path, overwrite: bool):
        self.root = root
        self.written: list[str] = []
        if root.exists() and not root.is_dir():
            raise ValueError(f"Output folder {root} exists and is not a folder.")
        entries = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
        if entries and not overwrite:
            raise ValueError(
                f"Output folder {root} is not empty ({_names(entries)}); pass --overwrite to replace the previous "
                "run's files, or choose an empty folder."
            )
        self._pending = self._previous() if entries else []

    def _previous(self) -> list[Path]:
        """The files the previous run wrote, as its manifest lists them (read and checked now, removed later)."""
        manifest = self.root / SCORE_MANIFEST
        if not manifest.is_file():
            entries = sorted(p.name for p in self.root.iterdir())
            raise ValueError(
                f"Output folder {self.root} holds no {SCORE_MANIFEST} (no earlier score run wrote it), so --overwrite "
                f"would not touch its files ({_names(entries)}): --overwrite removes only what a run's manifest lists. "
                "Empty the folder yourself, or choose another --out."
            )
        try:
            listed = json.loads(manifest.read_text(encoding="utf-8"))["files"]
            if not isinstance(listed, list):
                raise TypeError("'files' is not a list")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(
                f"Cannot replace the previous run in {self.root}: {manifest} is unreadable ({exc})."
            ) from None
        root = self.root.resolve()
        inside = [
            self.root / n for n in listed if isinstance(n, str) and (self.root / n).resolve().is_relative_to(root)
        ]
        if len(inside) < len(listed):
            logger.warning(
                "%s lists %d path(s) outside %s; left alone.", manifest, len(listed) - len(inside), self.root
            )
        return [*inside, manifest]

    def clear_previous(self) -> None:
        """Remove the previous run's files (once; called when the new results are ready to be written)."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        removed = 0
        for path in pending:
            if path.is_file() and not path.is_symlink():
                path.unlink()
                removed += 1
                if path.parent != self.root and not any(path.parent.iterdir()):
                    path.parent.rmdir()
        left = sorted(p.name for p in self.root.iterdir())
        logger.info(
            "%s: removed %d file(s) of the previous run%s.",
            self.root,
            removed,
            f"; kept {', '.join(left)}" if left else "",
        )

    def write(self, df, folder: Path, name: str) -> Path:
        """Write ``df`` as ``folder/name`` (atomically) and list it in the manifest."""
        self.clear_previous()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        write_csv(df, path)
        self.written.append(path.relative_to(self.root).as_posix())
        self._write_manifest()
        return path

    def _write_manifest(self) -> None:
        from sss_viewer._version import __version__
        from sss_viewer.fileio import atomic_write

        text = json.dumps({"command": "score", "sss_viewer_version": __version__, "files": self.written}, indent=1)
        atomic_write(self.root / SCORE_MANIFEST, lambda p: Path(p).write_text(text, encoding="utf-8"))
