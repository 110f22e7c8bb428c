"""The ``sss-viewer`` commands: one module per command, each with ``run(args, progress) -> int``.

:mod:`sss_viewer.cli` parses the command line and imports the command's module only when it runs,
so ``sss-viewer --help`` stays quick. Each module's ``run``:

Parameters
----------
args : argparse.Namespace
    The parsed command line of that command (``sss_viewer.cli.build_parser``).
progress : bool
    Show progress bars (False with ``--quiet``).

Returns
-------
int
    The exit status (0 success). A wrong command line raises
    :class:`sss_viewer.commands._shared.UsageError` (exit 2); a runtime error raises ``ValueError``,
    ``OSError`` … (exit 1), as ``sss_viewer.cli.main`` documents.
"""
