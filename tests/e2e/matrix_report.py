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
# The wasm leg (emscripten and Node): the built-in replays and orbits linked into a replay of its
# own; crates (Box2D, which Debian does not build for wasm) is not built there and says so.
wasm = {subject: s for (leg, subject), s in statuses.items() if leg == "wasm-node"}
have_wasm = subprocess.run(["sh", "-c", "command -v emcmake && command -v node"], capture_output=True).returncode == 0
if have_wasm:
    assert wasm.get("tests/golden/golden.replay") == "ok" and wasm.get("tests/golden/skirmish.replay") == "ok", wasm
    assert wasm.get("module orbits") == "ok", wasm
    if crates:
        assert wasm.get("module crates") == "skipped" and wasm.get("module crates_uncovered") == "skipped", wasm
else:
    assert wasm == {"*": "skipped"}, wasm
base = [s for (leg, _), s in statuses.items() if leg == "gcc-O2+glibc-baseline"]
assert base and all(s in ("ok", "skipped", "refused_as_expected") for s in base), statuses
if crates:
    assert statuses[("aarch64-gcc-O2", "module crates")] == "refused_as_expected", statuses
    where = [p for p in d["parts"] if p["leg"] == "aarch64-gcc-O2" and "crates" in p["replay"]]
    assert where and where[0]["tick"] > 0 and where[0]["where"], d["parts"]
    # Box2D built from Debian's source with each leg's flags (crates_uncovered): every leg
    # reproduces the replay, aarch64 among them.
    for leg in ["gcc-O0", "gcc-O2", "clang-O2", "clang-O3-native", "aarch64-gcc-O2"]:
        assert statuses.get((leg, "module crates_uncovered")) == "ok", (leg, statuses)
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
    # Its machine code covers the Box2D it opts out of its fingerprint: five builds, five codes.
    equ = json.load(open(f"{root}/crates_uncovered.equal-builds.json"))
    assert sorted(b["leg"] for b in equ["builds"]) == sorted(["gcc-O0", "gcc-O2", "clang-O2", "clang-O3-native", "aarch64-gcc-O2"]), equ
    assert all(b["code"].startswith("xxh3:") for b in equ["builds"]) and len({b["code"] for b in equ["builds"]}) == 5, equ
print(f"ok: the equal-builds reports list the {len(eq['builds'])} builds of orbits that reproduced its replay")
suite = ET.parse(f"{root}/report.xml").getroot()
assert suite.get("failures") == "0" and int(suite.get("tests")) == len(legs), suite.attrib
print(f"ok: {len(legs)} legs in the JSON and JUnit reports, all ok, refused as expected or skipped")

# A replay no build reproduces (the arena's old format 3 replay): its leg is reported failed.
out = f"{root}/fail.json"
r = subprocess.run(["bash", f"{src}/tools/determinism-matrix.sh", "--root", root, "--reuse-build", f"gcc-O2={root}/..", "--only", "gcc-O2", "--json", out,
                    f"{src}/tests/golden/format3.replay"], cwd=src, capture_output=True, text=True)
assert r.returncode == 1, (r.returncode, r.stdout[-2000:])
f = json.load(open(out))
assert not f["ok"] and f["legs"][0]["status"] == "fail" and "MISMATCH at tick" in f["legs"][0]["detail"], f
print("ok: a leg that parts from the replay is reported failed, with the tick")

# A module that calls libm's sin (tests/modules/swing), its replay recorded by this build: glibc's
# leg reproduces it, and the wasm leg, whose libm is emscripten's, parts, named to the field.
if have_wasm:
    bin_dir = os.path.join(root, "..", "bin")
    replay = f"{root}/swing.replay"
    subprocess.run([f"{bin_dir}/lockstep-replay", "--sim-lib", f"{bin_dir}/libswing.so", "record-scenario", replay,
                    "--ticks", "500"], check=True, capture_output=True)
    out = f"{root}/swing.json"
    r = subprocess.run(["bash", f"{src}/tools/determinism-matrix.sh", "--root", root, "--reuse-build", f"gcc-O2={root}/..", "--wasm-tree", f"{root}/../web-build", "--only", "gcc-O2", "--only",
                        "wasm-node", "--module-source", f"{src}/tests/modules/swing", "--module-target", "swing",
                        "--module-replay", replay, "--json", out], cwd=src, capture_output=True, text=True)
    assert r.returncode == 1, (r.returncode, r.stdout[-3000:])
    f = json.load(open(out))
    st = {(x["leg"], x["subject"]): x for x in f["legs"]}
    assert st[("gcc-O2", "module swing")]["status"] == "ok", f
    assert st[("wasm-node", "module swing")]["status"] == "fail", f
    assert "MISMATCH at tick" in st[("wasm-node", "module swing")]["detail"], f
    part = [p for p in f["parts"] if p["leg"] == "wasm-node"]
    assert part and part[0]["tick"] > 0 and " field " in part[0]["where"], f
    print(f"ok: a module calling libm's sin parts on the wasm leg at {part[0]['where']}")
else:
    print("skip: the wasm leg's parting (emscripten or Node is not installed)")
