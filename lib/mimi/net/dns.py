# Name resolution for the asyncio loop. socket.getaddrinfo (and asyncio.open_connection,
# which calls it) holds the whole loop while the DNS server answers: seconds on a
# slow network, during which the gateway, console and dispatcher stand still. This
# is a small DNS client (A records) over a non-blocking UDP socket awaited on the
# loop, with a small cache that also bridges a server that stops answering. The
# agent thread keeps the blocking getaddrinfo: on the board it releases the GIL.
# exchange() is the loop's one UDP request/reply helper (NTP uses it too), so the
# loop holds at most limits.SOCK_UDP datagram sockets. The packet helpers also serve
# the onboarding portal's captive DNS.
# Loaded for a lookup and dropped after it (asynchttp, ntp): its state (the cache and
# the socket's lock) is kept on mimi.net (dns_cache, dns_slot: set by the first load,
# so a board that never resolves holds neither), and a drop loses neither.
import os
import socket
import struct
import time
import asyncio
from mimi import limits, log, board, net

TAG = "dns"
ETIMEDOUT = 110  # lwIP and Linux agree
try:
    _cache = net.dns_cache  # name -> (ip, ticks_ms when it expires); expired entries kept as a fallback
except AttributeError:
    _cache = net.dns_cache = {}
    net.dns_slot = None


def is_ip(host):
    parts = host.split(".")
    return len(parts) == 4 and all(p.isdigit() and int(p) < 256 for p in parts)


def skip_name(pkt, i):
    """Index just past the (possibly compressed) name at pkt[i]; ValueError if cut short."""
    while True:
        n = pkt[i]  # IndexError past the end: the callers treat it as malformed
        if n == 0:
            return i + 1
        if n & 0xC0 == 0xC0:
            return i + 2  # a pointer ends the name
        if n & 0xC0:
            raise ValueError("bad label")
        i += 1 + n


def question(name):
    """The question section for an A record of `name`."""
    out = bytearray()
    for label in name.rstrip(".").split("."):
        b = label.encode()
        if not 0 < len(b) < 64:
            raise OSError(22, "not a host name: %r" % name)  # EINVAL
        out.append(len(b))
        out.extend(b)
    return bytes(out) + b"\x00\x00\x01\x00\x01"


def parse(pkt, ident):
    """(ip, ttl) from a reply to query `ident`; None for a datagram that is not that
    reply; OSError when the server says the name has no address."""
    if len(pkt) < 12:
        return None
    rid, flags, qd, an = struct.unpack("!HHHH", pkt[:8])
    if rid != ident or not flags & 0x8000:
        return None
    rcode = flags & 0xF
    if rcode == 3:
        raise OSError(2, "no such name")  # ENOENT
    if rcode:
        raise OSError(5, "DNS server error (rcode %d)" % rcode)  # EIO
    try:
        i = 12
        for _ in range(qd):
            i = skip_name(pkt, i) + 4
        for _ in range(an):
            i = skip_name(pkt, i)
            rtype, rclass, ttl, n = struct.unpack("!HHIH", pkt[i:i + 10])
            i += 10
            if rtype == 1 and rclass == 1 and n == 4:
                return "%d.%d.%d.%d" % tuple(pkt[i:i + 4]), ttl
            i += n
    except (IndexError, ValueError):
        raise OSError(5, "malformed DNS reply")
    raise OSError(2, "no address (no A record)")


def slot():
    """The loop's one datagram socket at a time (limits.SOCK_UDP)."""
    if net.dns_slot is None:
        net.dns_slot = asyncio.Lock()
    return net.dns_slot


async def exchange(addr, pkt, check, timeout_ms, tries=1):
    """Send datagram `pkt` to `addr` (a sockaddr) and return check(reply) for the
    first reply check accepts (it returns None for a stray datagram, or raises);
    OSError ETIMEDOUT when `tries` sends each wait timeout_ms in vain."""
    async with slot():
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.setblocking(False)
            for _ in range(tries):
                s.sendto(pkt, addr)
                try:
                    return await asyncio.wait_for_ms(_reply(s, check), timeout_ms)
                except asyncio.TimeoutError:
                    pass
        finally:
            s.close()
    raise OSError(ETIMEDOUT, "no reply within %d ms" % timeout_ms)


def _reply(s, check):
    # A generator is a coroutine to MicroPython's asyncio; it waits on the socket itself.
    from asyncio import core

    while True:
        yield core._io_queue.queue_read(s)  # sleep until a datagram arrives
        try:
            data = s.recv(limits.DNS_PACKET_MAX)
        except OSError:
            continue
        got = check(data)
        if got is not None:
            return got


async def resolve(host, server=None):
    """`host` as an IPv4 address string, without blocking the loop. server: (ip, port)
    of the DNS server (default board.dns_server(); None there: `host` comes back as
    it is, for the system's own resolver). OSError when it cannot be resolved."""
    if is_ip(host):
        return host
    hit = _cache.get(host)
    now = time.ticks_ms()
    if hit and time.ticks_diff(hit[1], now) > 0:
        return hit[0]
    server = server or board.dns_server()
    if not server:
        return host
    ident = struct.unpack("!H", os.urandom(2))[0]
    pkt = struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0) + question(host)  # recursion desired
    addr = socket.getaddrinfo(server[0], server[1])[0][-1]  # an address: no lookup
    try:
        ip, ttl = await exchange(addr, pkt, lambda d: parse(d, ident), limits.DNS_TIMEOUT_MS,
                                 limits.DNS_TRIES)
    except OSError as e:
        if hit:  # the server is gone, not the host: the last answer is the best guess
            log.warning(TAG, "%s: %s; using its last address %s", host, e, hit[0])
            return hit[0]
        raise OSError(e.errno, "cannot resolve %s: %s" % (host, e.args[-1]))
    ttl = min(max(ttl, limits.DNS_CACHE_MIN_S), limits.DNS_CACHE_MAX_S)
    if host not in _cache and len(_cache) >= limits.DNS_CACHE_MAX:
        del _cache[min(_cache, key=lambda k: time.ticks_diff(_cache[k][1], now))]  # soonest to expire
    _cache[host] = (ip, time.ticks_add(time.ticks_ms(), ttl * 1000))
    return ip
