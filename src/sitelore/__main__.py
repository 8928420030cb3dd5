"""``python -m sitelore``: the command line."""

from sitelore.cli import main

main()
