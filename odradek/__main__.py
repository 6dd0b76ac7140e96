"""`python -m odradek` runs the `odradek` command."""

from odradek.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
