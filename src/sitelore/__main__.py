"""``python -m sitelore``: the command line."""

from sitelore.cli.main import main

main()
