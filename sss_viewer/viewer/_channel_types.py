"""Correct a channel's type in the viewer: an EKG lead typed as iEEG leaves the ranking, a contact typed misc joins it.

The file's types (or those the readers inferred from the names, :mod:`sss_viewer.io._channel_conventions`)
are shown per channel; the clinician picks a channel and a type and applies it. The change is stored
with the annotations (``type`` column of the channels sidecar, :class:`AnnotationPanel.type_overrides`),
so it survives a reload, and the app rescores the recording with the corrected types.
"""

from __future__ import annotations

import panel as pn
import param

from sss_viewer.io.recording import IEEG_CH_TYPES

EDITABLE_TYPES = ("seeg", "ecog", "dbs", "eeg", "ecg", "emg", "eog", "misc", "stim", "resp", "bio")
"""Types a clinician can choose (MNE names); the first three are scored."""


def type_label(ch_type: str) -> str:
    """``"seeg (scored)"`` / ``"ecg (not scored)"``."""
    return f"{ch_type} ({'scored' if ch_type in IEEG_CH_TYPES else 'not scored'})"


class ChannelTypeEditor(pn.viewable.Viewer):
    """Pick a channel, see its type, set another; ``requested`` carries ``(channel, type)`` on Apply.

    Parameters
    ----------
    channels : list of str
        The recording's channel names (original names; ``display_names`` gives what is shown).
    types : dict
        ``{channel: current type}``.
    display_names : dict
        ``{channel: shown name}``.
    """

    channels = param.List(default=[], item_type=str)
    types = param.Dict(default={})
    display_names = param.Dict(default={})
    requested = param.Tuple(default=None, length=2, allow_None=True, doc="(channel, type) asked for by Apply.")

    def __init__(self, **params):
        super().__init__(**params)
        self._channel = pn.widgets.Select(label="Channel", options={}, width=150)
        self._type = pn.widgets.Select(label="Type", options={type_label(t): t for t in EDITABLE_TYPES}, width=150)
        self._apply = pn.widgets.Button(label="Set type", width=90)
        self._current = pn.pane.Markdown("", styles={"color": "#555"}, sizing_mode="stretch_width")
        self._channel.param.watch(lambda e: self._show_current(), "value")
        self._apply.on_click(lambda e: self.request(self._channel.value, self._type.value))
        self._refresh()

    def __panel__(self):
        return pn.Column(
            pn.Row(self._channel, self._type), pn.Row(self._apply, self._current), sizing_mode="stretch_width"
        )

    def request(self, channel: str | None, ch_type: str | None) -> None:
        """Ask for ``channel`` to become ``ch_type`` (ignored when either is missing or nothing changes)."""
        if not channel or not ch_type or self.types.get(channel) == ch_type:
            return
        self.requested = (channel, ch_type)

    @param.depends("channels", "display_names", "types", watch=True)
    def _refresh(self) -> None:
        options = {f"{self.display_names.get(c, c)} — {self.types.get(c, '?')}": c for c in self.channels}
        value = self._channel.value if self._channel.value in options.values() else None
        self._channel.param.update(options=options, value=value or (self.channels[0] if self.channels else None))
        self._show_current()

    def _show_current(self) -> None:
        channel = self._channel.value
        if channel is None:
            self._current.object = ""
            return
        current = self.types.get(channel, "?")
        self._current.object = f"now: {type_label(current)}"
        if current in EDITABLE_TYPES:
            self._type.value = current
