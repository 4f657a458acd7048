#!/usr/bin/env python3
"""Rewrites reads of `Shard`'s former public fields into accessor calls.

`Shard`'s fields are private (issue 40): `shard.store` is now
`shard.store()`, `shard.offsets` is `shard.offsets()`, and so on. Code
written against the old fields (a branch merged after the change) fails
with E0609/E0615/E0616 on `Shard`; this runs `cargo check` on the broker
crate, adds `()` at each span rustc reports for such an error, and prints
what else failed. Run it until it reports no fix (a fixed error can
reveal the next one). `shard.control` (an `Option`) has no same-name
accessor: write `shard.control_plane()` by hand.

Usage: scripts/fix-shard-fields.py   (from the workspace root)
"""

import collections
import json
import subprocess
import sys

CODES = ("E0609", "E0615", "E0616")
CHECK = ["cargo", "check", "-p", "ferrocket-broker", "--lib", "--tests", "--message-format=json"]


def main() -> int:
    out = subprocess.run(CHECK, capture_output=True, text=True).stdout
    edits = collections.defaultdict(set)
    other = 0
    for line in out.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") != "compiler-message":
            continue
        m = msg["message"]
        if m.get("level") != "error":
            continue
        code = (m.get("code") or {}).get("code")
        if code in CODES and "Shard" in m["message"]:
            field = m["message"].split("`")[1]
            for span in m["spans"]:
                if span["is_primary"]:
                    edits[span["file_name"]].add((span["byte_end"], span["byte_start"], field))
        else:
            other += 1
            print(m.get("rendered", m["message"]), file=sys.stderr)
    fixed = 0
    for path, spans in edits.items():
        text = open(path, "rb").read()
        for end, start, field in sorted(spans, reverse=True):
            if text[start:end].decode() != field:
                print(f"skipped {path}:{start}: not `{field}`", file=sys.stderr)
                continue
            text = text[:end] + b"()" + text[end:]
            fixed += 1
        open(path, "wb").write(text)
    print(f"fixed {fixed} in {len(edits)} files; other errors: {other}")
    return 1 if other else 0


if __name__ == "__main__":
    sys.exit(main())
