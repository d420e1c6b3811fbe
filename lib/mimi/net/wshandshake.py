# The opening handshake of RFC 6455: the accept key both sides compute, and the
# gateway's checks of a client's upgrade request (its key, the token, a browser's
# Origin) and its 101 answer. Loaded for a connection's upgrade only.
import binascii
import hashlib
from mimi.net import split_url, secrets_equal

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def accept_key(key):
    if isinstance(key, str):
        key = key.encode()
    digest = hashlib.sha1(key.strip() + GUID).digest()
    return binascii.b2a_base64(digest).strip().decode()


def key_ok(key):
    """Sec-WebSocket-Key must be base64 of 16 bytes."""
    try:
        return len(binascii.a2b_base64(key)) == 16
    except (ValueError, TypeError):
        return False


def presented_token(query, headers):
    t = query.get("token")
    if t:
        return t
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    return None


def token_ok(expected, query, headers):
    got = presented_token(query, headers)
    return bool(expected) and got is not None and secrets_equal(got, expected)


def origin_ok(origin, hosts, port):
    """A browser's Origin must be this board itself (http://<one of hosts>:<port>).
    No Origin header (non-browser clients) passes; "null" and other sites do not."""
    if origin is None:
        return True
    try:
        scheme, host, p, path = split_url(origin.strip().lower().rstrip("/"))
    except ValueError:
        return False
    return scheme == "http" and not path and host in hosts and (80 if p is None else p) == port


def upgrade_response(key):
    return ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n" % accept_key(key)).encode()
