#!/usr/bin/env bash
# lockstep-netsim --tcp ends a connection as TCP does, one direction at a time: a server that
# sends its last message and closes while the client is still sending must have that message
# delivered (40 ms later, through the relay's delay) before the client sees the end, and the client
# must see an orderly end (no reset). The browser player's session ends this way: SessionEnd and the
# WebSocket's close, while the page still sends its inputs.
source "$(dirname "$0")/lib.sh" "$1"
/usr/bin/python3 - "$BIN/lockstep-netsim" "$PORT" <<'PY' || fail "the server's last message did not reach the client through the relay"
import socket, subprocess, sys, threading, time

netsim, port = sys.argv[1], int(sys.argv[2])
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port + 1))
server.listen(1)
relay = subprocess.Popen([netsim, "--tcp", "--listen", str(port), "--forward", f"127.0.0.1:{port + 1}",
                          "--delay", "40", "--duration", "20"], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
try:
    for _ in range(100):
        try:
            client = socket.create_connection(("127.0.0.1", port), timeout=5)
            break
        except OSError:
            time.sleep(0.05)
    else:
        sys.exit("the relay never listened")
    conn, _ = server.accept()
    stop = threading.Event()

    def stream_up():  # the client sends every 10 ms, as a player's page does, until the end
        while not stop.is_set():
            try:
                client.send(b"input " * 10)
            except OSError:
                return
            time.sleep(0.01)

    sender = threading.Thread(target=stream_up)
    sender.start()
    time.sleep(0.3)
    conn.sendall(b"the last message")
    conn.close()  # with the client's inputs unread: the server's kernel answers what comes next with a reset
    got = b""
    try:
        while True:
            chunk = client.recv(4096)
            if not chunk:
                break
            got += chunk
    except ConnectionResetError:
        print("the client's connection was reset")
        got += b" (reset)"
    stop.set()
    sender.join()
    print(f"the client received {got!r}")
    sys.exit(0 if got == b"the last message" else 1)
finally:
    relay.terminate()
    relay.wait()
PY
echo "PASS: the server's last message came through before the relay's orderly end"
