# MicroPython side of the fake LLM servers (tests/fakes/llm.py): script replies and
# read recorded requests over the fake's plain-HTTP control endpoint, with a raw
# socket so the firmware's HTTP client (and its handshake count) stays untouched.
import json
import socket


def _call(fx, method, path, obj=None):
    host, port = fx["control"].split("://", 1)[1].split(":")
    body = json.dumps(obj).encode() if obj is not None else b""
    s = socket.socket()
    try:
        s.connect(socket.getaddrinfo(host, int(port))[0][-1])
        s.write(("%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n"
                 "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                 % (method, path, host, len(body))).encode() + body)
        data = b""
        while True:
            chunk = s.read(4096)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    head, _, payload = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    return json.loads(payload)


def script(fx, *items):
    """Queue replies (dicts as in tests/fakes/llm.py) on the fake server `fx`."""
    return _call(fx, "POST", "/_script", list(items))


def configure(fx, **kw):
    return _call(fx, "POST", "/_config", kw)


def reset(fx):
    return _call(fx, "POST", "/_reset", {})


def snapshot(fx, bodies=True, last=None):
    """{"requests": [...], "violations": [...], "handshakes": n, "connections": n};
    bodies=False / last=N keep the answer small for tight heaps."""
    q = "?bodies=%d" % bool(bodies) + ("&last=%d" % last if last else "")
    return _call(fx, "GET", "/_requests" + q)
