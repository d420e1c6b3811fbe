"""Loopback HTTP server with update bundles and a firmware image for the OTA
tests (CPython). `start(tmp)` -> dict (JSON-safe) + .close(). GET /NAME serves a file
of the folder; /chunked/NAME chunked; /redirect/NAME redirects to it (?to=URL: there);
/stall/NAME
sends half of it and then nothing; /trickle/NAME?every=S one byte every S seconds."""
import hashlib
import hmac
import http.server
import json
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import bundle  # noqa: E402

KEY = "test-ota-key-123"
NEW_FILES = {
    "/lib/mimi/fakeapp.py": b"VERSION = 'new'\n",
    "/lib/mimi/extra/__init__.py": b"# new package\n",
    "/defaults/config/SOUL.md": b"new soul\n",
    "/main.py": b"print('new main')\n",
}


class _Handler(http.server.BaseHTTPRequestHandler):
    root = None

    def log_message(self, *a):
        pass

    def do_GET(self):
        path, _, query = self.path.partition("?")
        if path.startswith("/redirect/"):  # ?to=URL: there instead
            self.send_response(302)
            to = query[3:] if query.startswith("to=") else "/" + path[len("/redirect/"):]
            self.send_header("Location", to)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        how, _, name = path.lstrip("/").rpartition("/")
        f = self.root / name
        if how not in ("", "chunked", "stall", "trickle") or not f.is_file():
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = f.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if how in ("stall", "trickle"):
            self._slow(data, how, float(query.partition("=")[2] or 1))
            return
        if how == "chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(0, len(data), 1000):
                part = data[i:i + 1000]
                self.wfile.write(b"%x\r\n" % len(part) + part + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    def _slow(self, data, how, every):
        """/stall/NAME: half of the bundle, then nothing (the connection held open
        until the client gives up); /trickle/NAME?every=S: one byte every S seconds."""
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            if how == "stall":
                self.wfile.write(data[:len(data) // 2])
                self.wfile.flush()
                self.connection.settimeout(600)
                self.connection.recv(1)  # b"" (or an error) once the client closes
                return
            for i in range(len(data)):
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                time.sleep(every)
        except OSError:
            pass  # the client gave up


def make_files(root):
    root = Path(root)
    good, man = bundle.bundle_bytes(NEW_FILES, "9.9.9", KEY)
    (root / "good.bundle").write_bytes(good)
    (root / "unsigned.bundle").write_bytes(bundle.bundle_bytes(NEW_FILES, "9.9.9")[0])
    (root / "wrongkey.bundle").write_bytes(bundle.bundle_bytes(NEW_FILES, "9.9.9", "other-key-456")[0])
    tampered = bytearray(good)
    tampered[-3] ^= 0x01  # a payload byte: the manifest (and its HMAC) still match
    (root / "tampered.bundle").write_bytes(bytes(tampered))
    (root / "truncated.bundle").write_bytes(good[:len(good) - 10])
    evil = dict(NEW_FILES)
    evil["/config.json"] = b'{"api_key": "stolen"}'
    (root / "outside.bundle").write_bytes(bundle.bundle_bytes(evil, "6.6.6", KEY)[0])
    fw = bytes([0xE9]) + bytes(range(256)) * 40  # 10 241 bytes: 3 blocks, the last partial
    (root / "fw.bin").write_bytes(fw)
    (root / "fw.bin.sig").write_text(hmac.new(KEY.encode(), fw, hashlib.sha256).hexdigest())
    (root / "notfw.bin").write_bytes(b"\x00" * 5000)
    return {
        "key": KEY,
        "files": {p: d.decode() for p, d in NEW_FILES.items()},
        "fw_sha256": hashlib.sha256(fw).hexdigest(),
        "fw_size": len(fw),
        "manifest": json.loads(man),
    }


class Server(dict):
    def close(self):
        for srv in self._srvs:
            srv.shutdown()
            srv.server_close()


def start(tmp, certs=None):
    """certs: tests/fakes/tlsca.make() paths; adds an HTTPS twin ("https_base", "ca")."""
    tmp = Path(tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    info = make_files(tmp)
    handler = type("H", (_Handler,), {"root": tmp})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    s = Server(info, base="http://127.0.0.1:%d" % srv.server_address[1])
    s._srvs = [srv]
    if certs:
        import ssl

        tsrv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(certs["cert"], certs["key"])
        tsrv.socket = ctx.wrap_socket(tsrv.socket, server_side=True)
        threading.Thread(target=tsrv.serve_forever, daemon=True).start()
        s._srvs.append(tsrv)
        s["https_base"] = "https://127.0.0.1:%d" % tsrv.server_address[1]
        s["ca"] = Path(certs["ca"]).read_text()
        s["other_ca"] = Path(certs["other_ca"]).read_text()
    return s
