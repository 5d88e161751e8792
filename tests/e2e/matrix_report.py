#!/usr/bin/python3
"""Checks the determinism matrix's reports (tools/determinism-matrix.sh --json/--junit), written by
ctest's determinism/matrix run, and that a leg that fails is reported as failed with why.
Usage: matrix_report.py ROOT SOURCE_DIR [crates]   (ROOT: the matrix's --root, holding report.json)"""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

root, src = sys.argv[1], sys.argv[2]
crates = len(sys.argv) > 3
d = json.load(open(f"{root}/report.json"))
legs = d["legs"]
assert d["ok"], d
statuses = {(x["leg"], x["subject"]): x["status"] for x in legs}
for leg in ["gcc-O0", "gcc-O2", "clang-O2", "clang-O3-native", "aarch64-gcc-O2"]:
    assert statuses.get((leg, "tests/golden/golden.replay")) == "ok", (leg, statuses)
    assert statuses.get((leg, "module orbits")) == "ok", (leg, statuses)
base = [s for (leg, _), s in statuses.items() if leg == "gcc-O2+glibc-baseline"]
assert base and all(s in ("ok", "skipped", "refused_as_expected") for s in base), statuses
if crates:
    assert statuses[("aarch64-gcc-O2", "module crates")] == "refused_as_expected", statuses
    where = [p for p in d["parts"] if p["leg"] == "aarch64-gcc-O2" and "crates" in p["replay"]]
    assert where and where[0]["tick"] > 0 and where[0]["where"], d["parts"]
# Each module's equal-builds report: the machine code of every build that reproduced its replay
# (lockstep-server --equal-builds), none that did not, each code the file's GNU build id.
def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    return out.split("Build ID: ")[1].split()[0]
eq = json.load(open(f"{root}/orbits.equal-builds.json"))
assert eq["format"] == "lockstep-equal-builds/1" and eq["module"] == "orbits", eq
assert sorted(b["leg"] for b in eq["builds"]) == sorted(["gcc-O0", "gcc-O2", "clang-O2", "clang-O3-native", "aarch64-gcc-O2"]), eq
assert all(b["code"] == build_id(b["file"]) for b in eq["builds"]), eq
assert len({b["code"] for b in eq["builds"]}) == 5, eq  # five builds, five machine codes
if crates:
    eqc = json.load(open(f"{root}/crates.equal-builds.json"))
    assert "aarch64-gcc-O2" not in [b["leg"] for b in eqc["builds"]] and eqc["builds"], eqc  # refused there
print(f"ok: the equal-builds reports list the {len(eq['builds'])} builds of orbits that reproduced its replay")
suite = ET.parse(f"{root}/report.xml").getroot()
assert suite.get("failures") == "0" and int(suite.get("tests")) == len(legs), suite.attrib
print(f"ok: {len(legs)} legs in the JSON and JUnit reports, all ok, refused as expected or skipped")

# A replay no build reproduces (the arena's old format 3 replay): its leg is reported failed.
out = f"{root}/fail.json"
r = subprocess.run(["bash", f"{src}/tools/determinism-matrix.sh", "--root", root, "--only", "gcc-O2", "--json", out,
                    f"{src}/tests/golden/format3.replay"], cwd=src, capture_output=True, text=True)
assert r.returncode == 1, (r.returncode, r.stdout[-2000:])
f = json.load(open(out))
assert not f["ok"] and f["legs"][0]["status"] == "fail" and "MISMATCH at tick" in f["legs"][0]["detail"], f
print("ok: a leg that parts from the replay is reported failed, with the tick")
