#!/usr/bin/python3
"""Checks the Agones manifests beside this file against Agones' schemas and against the server.

Usage: check.py BIN_DIR [--self-test]

For every *.yaml here: valid YAML; apiVersion agones.dev/v1; a Fleet's or GameServer's fields
that Agones requires, with values from the schemas' enumerations; ports and health settings that
match what lockstep-server does (the container port is the --port it listens on, UDP; the health
period is longer than the server's Health ping period from server/agones.hpp;
--agones is passed while health checking is on); and the container's arguments are accepted by
the real lockstep-server (every flag exists and parses: the server is started with them and must
still be running after a second). --self-test also checks that a manifest naming a flag the
server does not have, a TCP port or a too-short health period is caught.
Exit 0 when every manifest passes, 1 otherwise.
"""
import copy
import pathlib
import re
import socket
import subprocess
import sys
import tempfile
import time

import yaml

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent

PORT_POLICIES = {"Dynamic", "Static", "Passthrough", "None"}
PROTOCOLS = {"UDP", "TCP", "TCPUDP"}
SCHEDULING = {"Packed", "Distributed"}
STRATEGIES = {"RollingUpdate", "Recreate"}


def health_ping_ms():
    text = (ROOT / "server/agones.hpp").read_text()
    m = re.search(r"kAgonesHealthPeriodMs\s*=\s*(\d+)", text)
    if not m:
        raise SystemExit("check.py: kAgonesHealthPeriodMs not found in agones.hpp")
    return int(m.group(1))


def positive_int(errors, where, value, required=False):
    if value is None:
        if required:
            errors.append(f"{where} is required")
        return
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        errors.append(f"{where} must be a positive integer, not {value!r}")


def arg_value(args, flag):
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_accepts(bin_dir, args, errors, where):
    """Starts the real server with the manifest's arguments (on a free port, reports to a temporary
    folder); the arguments are accepted when it is still running after a second."""
    args = list(args)
    with tempfile.TemporaryDirectory() as tmp:
        for flag, value in (("--port", str(free_udp_port())), ("--desync-dir", tmp), ("--metrics-port", "0")):
            for i, a in enumerate(args):
                if a == flag and i + 1 < len(args):
                    args[i + 1] = value
        env = {"AGONES_SDK_HTTP_PORT": "1", "PATH": "/usr/bin:/bin"}
        p = subprocess.Popen([str(pathlib.Path(bin_dir) / "lockstep-server")] + args, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        code = p.poll()
        if code is None:
            p.terminate()
            p.wait(timeout=10)
            return
        last = (p.stderr.read().strip().splitlines() or ["(no message)"])[-1]
        errors.append(f"{where}: lockstep-server exited {code} with the manifest's args: {last}")


def check_gameserver_spec(spec, where, bin_dir, errors, ping_ms):
    if not isinstance(spec, dict):
        errors.append(f"{where} must be a mapping")
        return
    ports = spec.get("ports")
    if not isinstance(ports, list) or not ports:
        errors.append(f"{where}.ports must list the game port")
        ports = []
    container_ports = []
    for i, port in enumerate(ports):
        pw = f"{where}.ports[{i}]"
        if not isinstance(port, dict):
            errors.append(f"{pw} must be a mapping")
            continue
        policy = port.get("portPolicy", "Dynamic")
        if policy not in PORT_POLICIES:
            errors.append(f"{pw}.portPolicy {policy!r} is not one of {sorted(PORT_POLICIES)}")
        if policy == "Static" and "hostPort" not in port:
            errors.append(f"{pw}.hostPort is required with portPolicy Static")
        if policy != "Passthrough":
            cp = port.get("containerPort")
            if not isinstance(cp, int) or not 0 < cp < 65536:
                errors.append(f"{pw}.containerPort must be a port number, not {cp!r}")
            else:
                container_ports.append((cp, port.get("protocol", "UDP")))
        proto = port.get("protocol", "UDP")
        if proto not in PROTOCOLS:
            errors.append(f"{pw}.protocol {proto!r} is not one of {sorted(PROTOCOLS)}")
        elif proto == "TCP":
            errors.append(f"{pw}.protocol is TCP, but lockstep-server speaks UDP")
    health = spec.get("health", {})
    if not isinstance(health, dict):
        errors.append(f"{where}.health must be a mapping")
        health = {}
    health_on = not health.get("disabled", False)
    for field in ("initialDelaySeconds", "periodSeconds", "failureThreshold"):
        positive_int(errors, f"{where}.health.{field}", health.get(field))
    period = health.get("periodSeconds", 5)
    if health_on and isinstance(period, int) and period * 1000 <= ping_ms:
        errors.append(f"{where}.health.periodSeconds {period} s is not longer than the server's "
                      f"Health ping period ({ping_ms} ms): a healthy server would be marked Unhealthy")
    template = spec.get("template")
    containers = template.get("spec", {}).get("containers") if isinstance(template, dict) else None
    if not isinstance(containers, list) or not containers:
        errors.append(f"{where}.template.spec.containers is required")
        return
    if len(containers) > 1 and "container" not in spec:
        errors.append(f"{where}.container must name the game container when there are several")
    game = spec.get("container", containers[0].get("name"))
    for c in containers:
        cw = f"{where}.template.spec.containers[{c.get('name')}]"
        for field in ("name", "image"):
            if not c.get(field):
                errors.append(f"{cw}.{field} is required")
        if c.get("name") != game:
            continue
        args = [str(a) for a in c.get("args", [])]
        listen = arg_value(args, "--port") or "7777"
        if container_ports and not any(str(cp) == listen for cp, _ in container_ports):
            errors.append(f"{cw}: the server listens on --port {listen}, but the ports name "
                          f"{[cp for cp, _ in container_ports]}")
        if health_on and "--agones" not in args:
            errors.append(f"{cw}: health checking is on but --agones is not passed, so the server "
                          "never pings Health and is marked Unhealthy")
        server_accepts(bin_dir, args, errors, cw)


def check_manifest(doc, name, bin_dir, ping_ms):
    errors = []
    if not isinstance(doc, dict):
        return [f"{name}: not a mapping"]
    if doc.get("apiVersion") != "agones.dev/v1":
        errors.append(f"{name}: apiVersion must be agones.dev/v1")
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
        errors.append(f"{name}: metadata.name or metadata.generateName is required")
    kind = doc.get("kind")
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return errors + [f"{name}: spec is required"]
    if kind == "GameServer":
        check_gameserver_spec(spec, f"{name}: spec", bin_dir, errors, ping_ms)
    elif kind == "Fleet":
        positive_int(errors, f"{name}: spec.replicas", spec.get("replicas"))
        if spec.get("scheduling", "Packed") not in SCHEDULING:
            errors.append(f"{name}: spec.scheduling must be one of {sorted(SCHEDULING)}")
        strategy = spec.get("strategy", {}).get("type", "RollingUpdate")
        if strategy not in STRATEGIES:
            errors.append(f"{name}: spec.strategy.type must be one of {sorted(STRATEGIES)}")
        template = spec.get("template")
        if not isinstance(template, dict) or "spec" not in template:
            errors.append(f"{name}: spec.template.spec is required")
        else:
            check_gameserver_spec(template["spec"], f"{name}: spec.template.spec", bin_dir, errors, ping_ms)
    else:
        errors.append(f"{name}: kind must be GameServer or Fleet, not {kind!r}")
    return errors


def game_spec(doc):
    return doc["spec"]["template"]["spec"] if doc["kind"] == "Fleet" else doc["spec"]


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    bin_dir = sys.argv[1]
    ping_ms = health_ping_ms()
    manifests = sorted(HERE.glob("*.yaml"))
    if not manifests:
        raise SystemExit("check.py: no manifests found")
    failed = False
    docs = {}
    for path in manifests:
        try:
            doc = yaml.safe_load(path.read_text())
        except yaml.YAMLError as e:
            print(f"FAIL {path.name}: not valid YAML: {e}")
            failed = True
            continue
        docs[path.name] = doc
        errors = check_manifest(doc, path.name, bin_dir, ping_ms)
        for e in errors:
            print(f"FAIL {e}")
        failed |= bool(errors)
        if not errors:
            print(f"ok: {path.name} ({doc['kind']})")
    if "--self-test" in sys.argv and docs:
        name, doc = sorted(docs.items())[0]
        spoilers = {
            "a flag the server does not have": lambda s: s["template"]["spec"]["containers"][0]["args"].append("--no-such-flag"),
            "a TCP game port": lambda s: s["ports"][0].update(protocol="TCP"),
            "a health period no longer than the ping": lambda s: s["health"].update(periodSeconds=ping_ms // 1000),
            "a container port the server does not listen on": lambda s: s["ports"][0].update(containerPort=7000),
        }
        for what, spoil in spoilers.items():
            bad = copy.deepcopy(doc)
            spoil(game_spec(bad))
            if check_manifest(bad, name, bin_dir, ping_ms):
                print(f"ok: self-test catches {what}")
            else:
                print(f"FAIL self-test: {what} in {name} is not caught")
                failed = True
    print("1 failed" if failed else "all manifests pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
