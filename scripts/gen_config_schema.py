"""Write the JSON schema of the settings file to schemas/, or check the committed copy.

The schema is generated from ``sitelore.core.config.Settings`` (pydantic), so editors can
validate ``sitelore.toml`` files (for example with Taplo or Even Better TOML).

Usage: ``python scripts/gen_config_schema.py [--check]``; ``--check`` exits 1 when
the committed file is stale, naming the command that regenerates it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sitelore.core.config import settings_json_schema

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "sitelore.schema.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    args = parser.parse_args(argv)
    text = settings_json_schema()
    current = SCHEMA_PATH.read_text(encoding="utf-8") if SCHEMA_PATH.exists() else None
    if args.check:
        if current != text:
            sys.stderr.write(f"{SCHEMA_PATH}: stale; run: python scripts/gen_config_schema.py\n")
            return 1
        return 0
    if current != text:
        SCHEMA_PATH.parent.mkdir(parents=True, exist_ok=True)
        SCHEMA_PATH.write_text(text, encoding="utf-8")
        sys.stdout.write(f"wrote {SCHEMA_PATH}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
