#!/usr/bin/python3
"""A backend's result endpoint for the tests: answers the first POST with 500 (the server must try
again) and the later ones with 200, keeping the body of the first one it took as OUT_DIR/posted.json
and every POST's Idempotency-Key header, one a line, in OUT_DIR/keys.txt.

Usage: result_receiver.py PORT OUT_DIR (runs until killed)
"""
import http.server
import pathlib
import sys

port, out = int(sys.argv[1]), pathlib.Path(sys.argv[2])
posts = []


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(min(int(self.headers.get("Content-Length", "0")), 1 << 20))
        posts.append(body)
        with open(out / "keys.txt", "a") as keys:
            keys.write(self.headers.get("Idempotency-Key", "") + "\n")
        (out / "posts.count").write_text(str(len(posts)))
        if len(posts) == 1:
            self.send_response(500)
            self.end_headers()
            return
        if not (out / "posted.json").exists():
            (out / "posted.json").write_bytes(body)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
