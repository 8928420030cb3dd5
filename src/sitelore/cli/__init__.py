"""The ``sitelore`` command line: one module per family of commands.

:mod:`~sitelore.cli.main` holds the entry point and the core commands; the others add
theirs to the one Typer app of :mod:`~sitelore.cli.common`.
"""
