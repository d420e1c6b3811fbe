"""Fake SNTP servers on loopback UDP (CPython), one port per behaviour:
  good     answers with `unix` (a valid server reply, version 4, stratum 2)
  era1     answers with a time after the 2036 NTP wrap (`unix_era1`)
  kod      kiss-o'-death: stratum 0
  forged   a good-looking reply whose originate stamp is not the client's
  client   replies with mode 3 (not a server)
  silent   never answers
"""
import socket
import struct
import threading

NTP_TO_UNIX = 2208988800
UNIX = 1893456000 + 12345  # 2030-01-01 03:25:45 UTC
UNIX_ERA1 = 2145916800 + 86400 * 30  # 2038-01-31, after the 2036 wrap


def _reply(req, unix, stratum=2, mode=4, origin=None):
    secs = (int(unix) + NTP_TO_UNIX) % (1 << 32)
    frac = int((unix - int(unix)) * (1 << 32))
    pkt = bytearray(48)
    pkt[0] = (0 << 6) | (4 << 3) | mode
    pkt[1] = stratum
    pkt[24:32] = req[40:48] if origin is None else origin
    pkt[32:40] = struct.pack("!II", secs, frac)
    pkt[40:48] = struct.pack("!II", secs, frac)
    return bytes(pkt)


class Server:
    def __init__(self):
        self.socks = {}
        self.requests = []
        self.stop = False
        for name in ("good", "era1", "kod", "forged", "client", "silent"):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            s.settimeout(0.2)
            self.socks[name] = s
        self.threads = [threading.Thread(target=self._serve, args=(n, s), daemon=True)
                        for n, s in self.socks.items()]
        for t in self.threads:
            t.start()

    def _serve(self, name, s):
        while not self.stop:
            try:
                req, addr = s.recvfrom(512)
            except OSError:
                continue
            self.requests.append((name, req))
            if len(req) < 48 or name == "silent":
                continue
            if name == "good":
                out = _reply(req, UNIX + 0.25)
            elif name == "era1":
                out = _reply(req, UNIX_ERA1)
            elif name == "kod":
                out = _reply(req, UNIX, stratum=0)
            elif name == "forged":
                out = _reply(req, UNIX, origin=b"\x01" * 8)
            else:
                out = _reply(req, UNIX, mode=3)
            s.sendto(out, addr)

    def info(self):
        d = {n: s.getsockname()[1] for n, s in self.socks.items()}
        d.update(unix=UNIX, unix_era1=UNIX_ERA1)
        return d

    def close(self):
        self.stop = True
        for t in self.threads:
            t.join(1)
        for s in self.socks.values():
            s.close()
