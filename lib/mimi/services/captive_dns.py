# Captive-portal DNS: while the onboarding AP is up, every name resolves to the
# board, so a phone that joins the AP opens the settings page by itself.
# One non-blocking UDP socket served on the asyncio loop.
import socket
import struct
from mimi import limits, log
from mimi.net import dns

TAG = "dns"


def answer(query, ip):
    """The reply packet for a DNS query (bytes), or None to ignore it."""
    if len(query) < 12:
        return None
    ident, flags, qd = struct.unpack("!HHH", query[:6])
    if flags & 0x8000 or (flags >> 11) & 0xF != 0 or qd != 1:
        return None  # a response, not a standard query, or not one question
    try:
        i = dns.skip_name(query, 12)
    except (IndexError, ValueError):
        return None
    end = i + 4
    if end > len(query):
        return None
    qtype, qclass = struct.unpack("!HH", query[i:end])
    question = query[12:end]
    want_a = qtype in (1, 255) and qclass in (1, 255)
    head = struct.pack("!HHHHHH", ident, 0x8180 | (flags & 0x0100), 1, 1 if want_a else 0, 0, 0)
    out = head + question
    if want_a:
        addr = bytes(int(x) for x in ip.split("."))
        out += struct.pack("!HHHLH", 0xC00C, 1, 1, limits.DNS_TTL_S, 4) + addr
    return out


class Server:
    def __init__(self, ip, host="0.0.0.0", port=limits.DNS_PORT):
        self.ip = ip
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(socket.getaddrinfo(host, port)[0][-1])
        self.sock.setblocking(False)
        self.answered = 0
        self._closed = False

    async def serve(self):
        from asyncio import core

        while not self._closed:
            yield core._io_queue.queue_read(self.sock)  # sleep until a packet arrives
            if self._closed:
                break
            try:
                query, addr = self.sock.recvfrom(limits.DNS_PACKET_MAX)
            except OSError:
                continue
            try:
                reply = answer(query, self.ip)
                if reply:
                    self.sock.sendto(reply, addr)
                    self.answered += 1
            except (OSError, ValueError, IndexError) as e:
                log.warning(TAG, "bad query from %s: %s", addr, e)

    def close(self):
        self._closed = True
        try:
            self.sock.close()
        except OSError:
            pass
