#!/usr/bin/python3
"""Extracts the code of a Markdown guide so a test can build and run it.

Usage: guide-blocks.py GUIDE.md OUT_DIR

A fenced block whose info string names a file (```cpp file=dots.cpp) is appended to OUT_DIR/dots.cpp,
blocks of one file joined in the order they appear. A block marked ```sh test is appended to
OUT_DIR/guide-steps.sh, the shell steps the test runs in OUT_DIR. Other blocks are prose.
Prints what it wrote; exits 1 when the guide has no file block or no test step (a guide whose
markers were lost must not pass by testing nothing).
"""
import pathlib
import re
import sys

guide, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
files, steps = {}, []
fence = re.compile(r"^```(\S*)\s*(.*)$")
lines = guide.read_text().splitlines()
i = 0
while i < len(lines):
    m = fence.match(lines[i])
    if not m or not m.group(1):
        i += 1
        continue
    lang, info = m.group(1), m.group(2).split()
    body = []
    i += 1
    while i < len(lines) and not lines[i].startswith("```"):
        body.append(lines[i])
        i += 1
    i += 1
    name = next((w[5:] for w in info if w.startswith("file=")), None)
    if name:
        files.setdefault(name, []).append("\n".join(body))
    elif lang == "sh" and "test" in info:
        steps.append("\n".join(body))
for name, blocks in files.items():
    (out / name).write_text("\n\n".join(blocks) + "\n")
    print(f"{name}: {len(blocks)} blocks")
(out / "guide-steps.sh").write_text("set -euxo pipefail\n" + "\n".join(steps) + "\n")
print(f"guide-steps.sh: {len(steps)} steps")
sys.exit(0 if files and steps else 1)
