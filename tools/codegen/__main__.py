"""`python -m tools.codegen [--check] [--spec-dir DIR ...] [--out DIR]`

Regenerates `odradek/wire/_generated/` from Kafka's JSON specs, by default the union of the
snapshots pinned in the repo (`tools/codegen/specs/`, see its README and
`tools/codegen/union.py`). `--spec-dir`, given once or more, newest first, picks other snapshot
folders, each holding a `source.json`. With `--check`, generates into a temporary directory and
exits 1 if the committed output differs (stale, hand-edited, or made from other specs).
"""

from __future__ import annotations

import argparse
import filecmp
import sys
import tempfile
from pathlib import Path

from tools.codegen.generate import generate
from tools.codegen.spec import PINNED_SPEC_DIRS, ROOT

DEFAULT_OUT = ROOT / "odradek" / "wire" / "_generated"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.codegen")
    ap.add_argument("--spec-dir", type=Path, action="append", dest="spec_dirs",
                    help="a snapshot folder; once or more, newest first (default: the pinned ones)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="fail if the committed output is stale")
    args = ap.parse_args(argv)
    spec_dirs: list[Path] = args.spec_dirs or list(PINNED_SPEC_DIRS)
    for spec_dir in spec_dirs:
        if not (spec_dir / "message").is_dir():
            print(f"no specs at {spec_dir}/message", file=sys.stderr)
            return 2
        if not (spec_dir / "source.json").is_file():
            print(f"no {spec_dir}/source.json naming where the specs come from", file=sys.stderr)
            return 2
    if not args.check:
        generate(spec_dirs, args.out)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        generate(spec_dirs, Path(tmp))
        cmp = filecmp.dircmp(tmp, args.out, ignore=["__pycache__"])
        stale = cmp.left_only + cmp.right_only + cmp.diff_files
        if not stale:
            # dircmp compares shallowly by stat; confirm contents byte for byte.
            stale = [
                n
                for n in cmp.common_files
                if (Path(tmp) / n).read_bytes() != (args.out / n).read_bytes()
            ]
        if stale:
            print("generated code is stale: " + ", ".join(sorted(stale)), file=sys.stderr)
            return 1
    print("generated code is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
