"""A fake DNS server on loopback UDP (CPython), speaking the real wire format.

    srv = Server({"api.telegram.test": "127.0.0.1"})
    srv.port; srv.delay_s = 0.3; srv.silent = True; srv.queries; srv.close()

Names in `names` get an A record (a name mapped to "cname:other" gets a CNAME to
`other` followed by other's A record, as recursive servers answer); other names
get NXDOMAIN. `delay_s` holds every answer back (a slow network), `silent` drops
all questions, `forge_first` sends a reply with the wrong id before the real one.
The same per name, for tests that cannot reach the server's attributes (MicroPython
ones): a name starting "slow." is answered after SLOW_S, "silent." never,
"forged." after a forged reply.
"""
import socket
import struct
import threading
import time

SLOW_S = 0.3

def _name(labels):
    return b"".join(bytes([len(x)]) + x for x in labels) + b"\x00"


def _read_name(pkt, i):
    labels = []
    while pkt[i]:
        n = pkt[i]
        labels.append(pkt[i + 1:i + 1 + n])
        i += 1 + n
    return labels, i + 1


class Server:
    def __init__(self, names=None):
        self.names = dict(names or {})
        self.delay_s = 0
        self.silent = False
        self.forge_first = False
        self.queries = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def info(self):
        return {"port": self.port, "names": self.names}

    def _serve(self):
        while not self._stop:
            try:
                pkt, addr = self.sock.recvfrom(512)
            except OSError:
                continue
            labels, end = _read_name(pkt, 12)
            name = b".".join(labels).decode()
            self.queries.append(name)
            if self.silent or name.startswith("silent."):
                continue
            threading.Thread(target=self._answer, args=(pkt, end, name, addr), daemon=True).start()

    def _answer(self, pkt, end, name, addr):
        delay = SLOW_S if name.startswith("slow.") else self.delay_s
        if delay:
            time.sleep(delay)
        ident = struct.unpack("!H", pkt[:2])[0]
        question = pkt[12:end + 4]
        answers = []
        target = self.names.get(name)
        if isinstance(target, str) and target.startswith("cname:"):
            other = target[6:]
            other_name = _name([x.encode() for x in other.split(".")])
            answers.append(b"\xc0\x0c" + struct.pack("!HHIH", 5, 1, 300, len(other_name)) + other_name)
            answers.append(other_name + struct.pack("!HHIH", 1, 1, 300, 4)
                           + socket.inet_aton(self.names[other]))
        elif target:
            answers.append(b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 300, 4) + socket.inet_aton(target))
        rcode = 0 if answers else 3
        head = struct.pack("!HHHHHH", ident, 0x8180 | rcode, 1, len(answers), 0, 0)
        if self.forge_first or name.startswith("forged."):
            forged = struct.pack("!HHHHHH", ident ^ 0x5555, 0x8180, 1, 1, 0, 0) + question + (
                b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 300, 4) + socket.inet_aton("10.6.6.6"))
            self.sock.sendto(forged, addr)
        self.sock.sendto(head + question + b"".join(answers), addr)

    def close(self):
        self._stop = True
        self._thread.join(2)
        self.sock.close()
