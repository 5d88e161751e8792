#!/usr/bin/env python3
"""Where a tick of play goes, in instructions: relay mode (lockstep-server --relay) beside the bare
ENet relay (lockstep-bench-relay), each function's own instructions per client-tick, grouped by
where the code lives (ENet, the C library's allocator and copies, zlib's CRC of the datagram check,
the kernel's entry points in the C library, and lockstep's own).

Each program runs one 4-player session of 1000 and of 2000 ticks under callgrind; the difference
over 4000 client-ticks is a tick in play, without start-up and shutdown (as
tools/measure-relay-instructions.sh counts). Instructions do not move with the machine's load, so
two builds compare on any day.

Usage: tools/relay-profile.py [BIN_DIR] [--top N]
"""
import os
import random
import re
import subprocess
import sys
import tempfile
import time

GROUPS = [  # (group, pattern on the object a function lives in, pattern on its name)
    ("ENet", re.compile(r"libenet"), None),
    ("allocator and copies (C library)", re.compile(r"libc\.so|libstdc\+\+"),
     re.compile(r"malloc|free|memcpy|memmove|memset|calloc|realloc|operator new|operator delete")),
    ("CRC of the datagram check (zlib)", re.compile(r"libz\."), None),
    ("system call stubs and clocks (C library)", re.compile(r"libc\.so|vdso"), None),
]


def group_of(name):
    m = re.search(r"\[([^\]]*)\]$", name)
    obj = m.group(1) if m else ""
    for g, in_object, named in GROUPS:
        if in_object.search(obj) and (named is None or named.search(name)):
            return g
    return "lockstep's own code"


def self_costs(path):
    out = subprocess.run(["callgrind_annotate", "--threshold=100", "--tree=none", "--auto=no", path],
                         capture_output=True, text=True, check=True).stdout
    costs = {}
    for line in out.splitlines():
        m = re.match(r"\s*([0-9,]+) \([ 0-9.]+%\)\s+(.*)", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        costs[m.group(2)] = costs.get(m.group(2), 0) + int(m.group(1).replace(",", ""))
    return costs


def run(bin_dir, work, name, ticks, relay_mode):
    port = str(20000 + random.randrange(8000))
    out = os.path.join(work, f"{name}-{ticks}.cg")
    if relay_mode:
        server = [os.path.join(bin_dir, "lockstep-server"), "--port", port, "--players", "4", "--ticks", str(ticks),
                  "--relay", os.path.join(work, "game.json")]
    else:
        server = [os.path.join(bin_dir, "lockstep-bench-relay"), "--port", port, "--players", "4", "--ticks", str(ticks),
                  "--down-bytes", "39"]
    s = subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + server,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2)
    if relay_mode:
        clients = [subprocess.Popen([os.path.join(bin_dir, "lockstep-client"), "--connect", "127.0.0.1:" + port,
                                     "--name", f"c{i}", "--bot", str(i)], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL) for i in range(1, 5)]
    else:
        clients = [subprocess.Popen([os.path.join(bin_dir, "lockstep-bench-load"), "--base-port", port, "--sessions", "1",
                                     "--players", "4", "--raw", "45"], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)]
    deadline = time.time() + 300
    for c in clients:
        c.wait(timeout=max(1, deadline - time.time()))
    s.wait(timeout=max(1, deadline - time.time()))
    if s.returncode != 0:
        sys.exit(f"{name} ({ticks} ticks) ended with {s.returncode}")
    return self_costs(out)


def per_client_tick(short, long):
    return {k: (long.get(k, 0) - short.get(k, 0)) / 4000.0 for k in set(short) | set(long)}


def main():
    args = [a for a in sys.argv[1:]]
    top = 25
    if "--top" in args:
        i = args.index("--top")
        top = int(args[i + 1])
        del args[i:i + 2]
    bin_dir = args[0] if args else "build/bin"
    lib = os.path.abspath(os.path.join(bin_dir, "..", "lib"))
    os.environ["LD_LIBRARY_PATH"] = lib + (":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else "")
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "game.json"), "w") as f:
            subprocess.run([os.path.join(bin_dir, "lockstep-synctest"), "--describe"], stdout=f, check=True,
                           stderr=subprocess.DEVNULL)
        relay = per_client_tick(run(bin_dir, work, "relay", 1000, True), run(bin_dir, work, "relay", 2000, True))
        bare = per_client_tick(run(bin_dir, work, "bare", 1000, False), run(bin_dir, work, "bare", 2000, False))

    def grouped(costs):
        g = {}
        for k, v in costs.items():
            g[group_of(k)] = g.get(group_of(k), 0) + v
        return g

    rg, bg = grouped(relay), grouped(bare)
    print("instructions per client-tick in play, by where the code lives")
    print(f"{'':44} {'relay mode':>11} {'bare relay':>11}")
    for g in [g for g, *_ in GROUPS] + ["lockstep's own code"]:
        print(f"{g:44} {rg.get(g, 0):11.0f} {bg.get(g, 0):11.0f}")
    print(f"{'all':44} {sum(relay.values()):11.0f} {sum(bare.values()):11.0f}")
    print(f"\nrelay mode's {top} costliest functions (own instructions per client-tick)")
    for name, v in sorted(relay.items(), key=lambda kv: -kv[1])[:top]:
        short = re.sub(r"\s*\[[^\]]*\]$", "", name).replace("(anonymous namespace)", "{anon}")
        short = re.sub(r"\(.*", "", re.sub(r"^[^:]*:", "", short)) if not short.startswith("???") else short
        print(f"{v:8.0f}  {group_of(name)[:12]:12}  {short[:110]}")


if __name__ == "__main__":
    main()
