#!/usr/bin/python3
"""A matchmaker's last step, for lockstep on Agones: allocate a game server for one match with a
fresh token key of its own, and mint each player a connect token for it.

Usage:
  matchmaker.py --players alice,bob [--fleet lockstep] [--expires-in 30] [--token-bin lockstep-token]
  matchmaker.py --players alice,bob --address 203.0.113.7:7342   (no cluster: mint for a known server;
      the key, from LOCKSTEP_MATCH_KEY or new, is printed for whoever hands it to that server)

With a cluster it creates a GameServerAllocation through kubectl whose metadata carries the
match's key in the annotation lockstep.dev/token-key; Agones sets it on the allocated GameServer,
and lockstep-server --agones --token-key agones reads it from its SDK sidecar. The key exists
nowhere else: a token for this match is refused by every other server of the fleet, and the
annotation is readable only to whoever may read the GameServer (keep that to the matchmaker).
Prints JSON: {"server": "IP:PORT", "tokens": {player: base64 token}} (with --address also
"key_annotation", the annotation to hand the server); the
matchmaker sends each player its token over its own authenticated channel (HTTPS), and the game
joins with it (lockstep-client --connect-token FILE, or lockstep_client_config.connect_token).
--print-allocation prints the allocation it would create and exits.
"""
import argparse
import json
import os
import secrets
import subprocess
import sys

ANNOTATION = "lockstep.dev/token-key"


def allocation(fleet, key_hex):
    return {
        "apiVersion": "allocation.agones.dev/v1",
        "kind": "GameServerAllocation",
        "spec": {
            "selectors": [{"matchLabels": {"agones.dev/fleet": fleet}}],
            "metadata": {"annotations": {ANNOTATION: key_hex}, "labels": {"lockstep.dev/match": "true"}},
        },
    }


def allocate(fleet, key_hex):
    """Creates the allocation; returns "IP:PORT" of the game server Agones handed out."""
    out = subprocess.run(["kubectl", "create", "-o", "json", "-f", "-"], input=json.dumps(allocation(fleet, key_hex)),
                         capture_output=True, text=True, check=True)
    status = json.loads(out.stdout)["status"]
    if status.get("state") != "Allocated":
        sys.exit(f"matchmaker: no game server free in fleet {fleet} ({status.get('state')})")
    return f"{status['address']}:{status['ports'][0]['port']}"


def mint(token_bin, key_hex, server, client_id, slot, expires_in):
    # The key goes to lockstep-token through its environment, never its command line.
    env = dict(os.environ, LOCKSTEP_MATCH_KEY=key_hex)
    out = subprocess.run([token_bin, "mint", "--key", "env:LOCKSTEP_MATCH_KEY", "--client-id", str(client_id),
                          "--server", server, "--slot", str(slot), "--expires-in", str(expires_in),
                          "--format", "base64"], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--players", required=True, help="comma-separated player ids, in slot order")
    ap.add_argument("--fleet", default="lockstep")
    ap.add_argument("--address", help="IP:PORT of a server already allocated (no kubectl)")
    ap.add_argument("--expires-in", type=int, default=30)
    ap.add_argument("--token-bin", default="lockstep-token")
    ap.add_argument("--print-allocation", action="store_true")
    a = ap.parse_args()
    players = [p for p in a.players.split(",") if p]
    key_hex = os.environ.get("LOCKSTEP_MATCH_KEY") or secrets.token_hex(32)
    if a.print_allocation:
        print(json.dumps(allocation(a.fleet, key_hex), indent=2))
        return
    server = a.address or allocate(a.fleet, key_hex)
    tokens = {p: mint(a.token_bin, key_hex, server, 1000 + i, i, a.expires_in) for i, p in enumerate(players)}
    out = {"server": server, "tokens": tokens}
    if a.address:  # no allocation carried the key: whoever runs the server needs it
        out["key_annotation"] = {ANNOTATION: key_hex}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
