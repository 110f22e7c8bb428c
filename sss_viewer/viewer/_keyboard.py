"""Keyboard review, as in EDFbrowser and MNE's browser: page time and channels, scale traces, set markers, undo.

Two parts:

* :class:`KeyListener` — a browser-side component (Panel ``JSComponent`` with inline JavaScript, nothing
  loaded from a CDN) that listens for ``keydown`` on the whole page and sends each key it knows to Python.
  It is **focus-safe**: a key typed in an input, text area, select or editable element (or anything inside
  one, shadow DOM included) is never taken, nor is a chord with Ctrl, Meta or Alt (the browser's own
  shortcuts), nor a key a widget already handled (``defaultPrevented``); auto-repeat of a held key is
  swallowed (one action per press). It shows a small "⌨ keys: ?" hint; clicking it toggles the help card.
* :class:`KeyboardReview` — the controller: maps a key to an action on a
  :class:`~sss_viewer.viewer.traces.TraceView` and an :class:`~sss_viewer.viewer._annotations.AnnotationPanel`
  (:data:`KEY_HELP` lists them). :meth:`KeyboardReview.handle` does it without a browser.
"""

from __future__ import annotations

import logging
import uuid
from contextlib import nullcontext

import panel as pn
import param
from panel.custom import JSComponent

from sss_viewer.viewer._annotations import AnnotationPanel
from sss_viewer.viewer.traces import TraceView

logger = logging.getLogger(__name__)

AMPLITUDE_STEP = 1.25
"""``+``/``=`` divide :attr:`TraceView.amplitude_uv` (µV per half row) by this — traces bigger; ``-``/``_``
multiply by it — traces smaller. Four presses change the scale about 2.4-fold, ten about 9.3-fold."""
AMPLITUDE_LIMITS_UV = (1e-3, 1e7)
"""The amplitude the keys never go below or above (µV per half row)."""
HINT = "⌨ keys: ?"

KEY_ACTIONS: dict[str, str] = {
    "ArrowRight": "time_next",
    "ArrowLeft": "time_prev",
    "PageDown": "time_next",
    "PageUp": "time_prev",
    "ArrowDown": "channels_next",
    "ArrowUp": "channels_prev",
    "Home": "start",
    "End": "end",
    "+": "bigger",
    "=": "bigger",
    "-": "smaller",
    "_": "smaller",
    "o": "onset",
    "f": "offset",
    "n": "note",
    "u": "undo",
    "?": "help",
}
"""``KeyboardEvent.key`` → action (letters also upper case: Caps Lock, Shift)."""

KEY_HELP: tuple[tuple[str, str], ...] = (
    ("→ / ←", "next / previous time page (Shift: half a page)"),
    ("PageDown / PageUp", "next / previous time page"),
    ("↓ / ↑", "next / previous channel page"),
    ("Home / End", "start / end of the recording"),
    ("+ / −", f"traces bigger / smaller (amplitude ÷ / × {AMPLITUDE_STEP:g})"),
    ("o / f / n", "onset / offset / note marker at the mouse pointer (else the centre of the view)"),
    ("u", "undo the last annotation edit"),
    ("?", "show / hide this card"),
)
"""(keys, what they do): the help card's rows."""

_JS = """
const FIELDS = new Set(["INPUT", "TEXTAREA", "SELECT"]);
const LISTENERS = globalThis.__sssViewerKeyListeners || (globalThis.__sssViewerKeyListeners = new Map());

function inField(event) {
  // composedPath() reaches into (open) shadow roots: bokeh renders every widget inside one
  for (const node of event.composedPath()) {
    if (node instanceof Element && (FIELDS.has(node.tagName) || node.isContentEditable)) {
      return true;
    }
  }
  return false;
}

export function render({ model, el }) {
  const send = (key, shift) => {
    const count = ((model.pressed && model.pressed.count) || 0) + 1;
    model.pressed = { key: key, shift: shift, count: count };
  };
  const hint = document.createElement("span");
  hint.textContent = model.hint;
  hint.title = "Keyboard review: click or press ? for the keys";
  hint.style.cursor = "pointer";
  hint.style.color = "#555";
  hint.addEventListener("click", () => send("?", false));
  el.appendChild(hint);

  const onKey = (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || event.isComposing) {
      return;
    }
    if (!model.keys.includes(event.key) || inField(event)) {
      return;
    }
    event.preventDefault();
    if (!event.repeat) {
      send(event.key, event.shiftKey);
    }
  };
  // one listener per component, even when it is rendered again or shown twice
  const previous = LISTENERS.get(model.listener_id);
  if (previous) {
    document.removeEventListener("keydown", previous);
  }
  LISTENERS.set(model.listener_id, onKey);
  document.addEventListener("keydown", onKey);
  model.on("remove", () => {
    if (LISTENERS.get(model.listener_id) === onKey) {
      document.removeEventListener("keydown", onKey);
      LISTENERS.delete(model.listener_id);
    }
  });
}
"""


class KeyListener(JSComponent):
    """Sends the keys of ``keys`` pressed anywhere on the page (outside fields) to :attr:`pressed`.

    Each press sets ``pressed`` to ``{"key": KeyboardEvent.key, "shift": bool, "count": int}``; the
    count grows by one per press, so pressing the same key again is a change too.
    """

    keys = param.List(default=[], item_type=str, doc="KeyboardEvent.key values taken (default action prevented).")
    pressed = param.Dict(default={}, doc="The last press: {key, shift, count}.")
    hint = param.String(default=HINT, doc="The small text shown (click: sends '?').")
    listener_id = param.String(default="", doc="Identifies this listener in the page (one per component).")

    _esm = _JS

    def __init__(self, **params):
        params.setdefault("listener_id", uuid.uuid4().hex)
        params.setdefault("height", 24)
        params.setdefault("width", 90)
        super().__init__(**params)


def _help_markdown() -> str:
    rows = "\n".join(f"| {keys} | {text} |" for keys, text in KEY_HELP)
    return f"**Keyboard review** (not while typing in a field)\n\n| key | does |\n|---|---|\n{rows}\n"


class KeyboardReview(pn.viewable.Viewer):
    """Review a recording from the keyboard: the keys of :data:`KEY_ACTIONS` act on ``traces`` and ``annotations``.

    Parameters
    ----------
    traces : TraceView
        The trace view paged and scaled.
    annotations : AnnotationPanel, optional
        Where ``o``/``f``/``n`` add markers and ``u`` undoes; without one those keys do nothing.
    """

    traces = param.ClassSelector(class_=TraceView, doc="The trace view the keys page and scale.")
    annotations = param.ClassSelector(
        class_=AnnotationPanel, default=None, allow_None=True, doc="Where marker keys add markers and u undoes."
    )
    help_visible = param.Boolean(default=False, doc="Whether the help card listing the keys is shown.")
    last_action = param.String(default="", doc="What the last key did (shown beside the hint).")

    def __init__(self, **params):
        if params.get("traces") is None:
            raise ValueError("KeyboardReview needs traces: a TraceView to page and scale.")
        super().__init__(**params)
        self.listener = KeyListener(keys=sorted({*KEY_ACTIONS, *(k.upper() for k in KEY_ACTIONS if k.isalpha())}))
        self.listener.param.watch(self._on_pressed, "pressed")
        self._status = pn.pane.Markdown("", margin=(0, 10), styles={"color": "#555"})
        self._help = pn.pane.Alert(_help_markdown(), alert_type="light", visible=False, width=560)
        self.param.watch(lambda e: setattr(self._help, "visible", e.new), "help_visible")
        self.param.watch(lambda e: setattr(self._status, "object", e.new), "last_action")

    def __panel__(self):
        return pn.Column(pn.Row(self.listener, self._status), self._help, sizing_mode="stretch_width")

    def _on_pressed(self, event) -> None:
        press = event.new or {}
        key = press.get("key")
        if not isinstance(key, str):
            return
        try:
            self.handle(key, shift=bool(press.get("shift")))
        except Exception:  # a key must never break the session
            logger.exception("Keyboard review: key %r failed", key)
            self.last_action = f"⚠ key {key} failed (see the server log)"

    # ---------------------------------------------------------------- actions

    def handle(self, key: str, shift: bool = False) -> str | None:
        """Do what ``key`` (a ``KeyboardEvent.key``) stands for; return what was done, or None for a key not handled.

        Parameters
        ----------
        key : str
            ``"ArrowRight"``, ``"PageDown"``, ``"+"``, ``"o"``, … (:data:`KEY_ACTIONS`).
        shift : bool
            Shift held: → / ← step half a page.

        Returns
        -------
        description : str or None
            A short description of the action (also in :attr:`last_action`); None when ``key`` is not a
            review key.
        """
        action = KEY_ACTIONS.get(key) or (KEY_ACTIONS.get(key.lower()) if len(key) == 1 and key.isalpha() else None)
        if action is None:
            return None
        if action == "help":
            self.help_visible = not self.help_visible
            text = "help shown" if self.help_visible else "help hidden"
        elif action in ("undo", "onset", "offset", "note"):
            text = self._annotate(action)
        elif self.traces.recording is None:
            text = "no recording open"
        else:
            text = getattr(self, f"_{action}")(shift)
        self.last_action = text
        logger.debug("Keyboard review: %s%s → %s", "Shift+" if shift else "", key, text)
        return text

    def _window_text(self, prefix: str) -> str:
        t0, t1 = self.traces.window()
        return f"{prefix}: {t0:.2f}–{t1:.2f} s"

    def _time_next(self, shift: bool) -> str:
        return self._time_step(+1, shift)

    def _time_prev(self, shift: bool) -> str:
        return self._time_step(-1, shift)

    def _time_step(self, direction: int, shift: bool) -> str:
        before = float(self.traces.start_s)
        if shift:
            self._set_start(before + direction * float(self.traces.span_s) / 2)
        else:
            self.traces._step_time(direction)
        if float(self.traces.start_s) == before:
            return self._window_text("at the end" if direction > 0 else "at the start")
        return self._window_text(("half a page " if shift else "page ") + ("later" if direction > 0 else "earlier"))

    def _start(self, _shift: bool) -> str:
        self._set_start(0.0)
        return self._window_text("start")

    def _end(self, _shift: bool) -> str:
        self._set_start(float(self.traces.duration_s))
        return self._window_text("end")

    def _set_start(self, start_s: float) -> None:
        """Move the view to ``start_s`` (s), kept inside the recording, in one message to the browser."""
        latest = max(0.0, float(self.traces.duration_s) - float(self.traces.span_s))
        start = float(min(max(0.0, start_s), latest))
        if start != float(self.traces.start_s):
            with _one_message():
                self.traces.start_s = start

    def _channels_next(self, _shift: bool) -> str:
        return self._channel_step(+1)

    def _channels_prev(self, _shift: bool) -> str:
        return self._channel_step(-1)

    def _channel_step(self, direction: int) -> str:
        before = int(self.traces.page)
        self.traces._step_page(direction)
        where = f"channel page {self.traces.page + 1} of {self.traces.n_pages}"
        if self.traces.page == before:
            return f"{'last' if direction > 0 else 'first'} {where}"
        return where

    def _bigger(self, _shift: bool) -> str:
        return self._scale(1 / AMPLITUDE_STEP)

    def _smaller(self, _shift: bool) -> str:
        return self._scale(AMPLITUDE_STEP)

    def _scale(self, factor: float) -> str:
        """Multiply the amplitude (µV per half row) by ``factor``, within :data:`AMPLITUDE_LIMITS_UV`."""
        current = float(self.traces.amplitude_uv or self.traces.row_amplitudes()[:1].max(initial=100.0))
        low, high = AMPLITUDE_LIMITS_UV
        self.traces.amplitude_uv = float(min(max(current * factor, low), high))
        return f"amplitude {self.traces.amplitude_uv:.3g} µV"

    def marker_time(self) -> float:
        """Where a marker key puts its marker (s): the time under the mouse pointer, else the centre of the view."""
        cursor = getattr(self.traces, "cursor_s", None)
        if cursor is not None:
            return float(cursor)
        t0, t1 = self.traces.window()
        return (t0 + t1) / 2

    def _annotate(self, action: str) -> str:
        annotations = self.annotations
        if annotations is None:
            return "no annotation panel"
        if action == "undo":
            n_before = len(annotations.undo_actions)
            annotations.undo()
            return "undone" if len(annotations.undo_actions) < n_before else annotations.status
        if self.traces.recording is None:
            return "no recording open"
        at = round(self.marker_time(), 3)
        n_before = len(annotations.markers)
        annotations.add_marker(action, onset_s=at)
        if len(annotations.markers) == n_before:  # refused (e.g. the same marker is there): the panel says why
            return annotations.status
        return f"{action} marker at {at:.2f} s"


def _one_message():
    """Send the bokeh changes made inside as one message in a server session (a no-op elsewhere)."""
    doc = pn.state.curdoc
    if doc is not None and getattr(doc, "session_context", None) is not None:
        return pn.io.unlocked()
    return nullcontext()
