"""``sss-viewer model-accept``: accept a deliberately edited model ``config.json``."""

from __future__ import annotations

from sss_viewer.commands._shared import say


def run(args, progress: bool) -> int:
    """Record the model's edited ``config.json`` values as its own."""
    from sss_viewer.engine.bundle import accept_config

    path = accept_config(args.model)
    say(f"accepted {path}: the model now loads with its current values (the weights are unchanged)")
    return 0
