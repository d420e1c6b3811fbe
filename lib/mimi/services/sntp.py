# A small SNTP client (RFC 4330) on a UDP socket: the name resolved and the reply
# awaited without holding the loop (net/dns.py). Loaded by services/ntp.py for a
# sync (on the board: at boot and every limits.NTP_RESYNC_S) and dropped after; the
# sync's steps live here too, so the resident ntp.py holds none of their code or names.
import os
import socket
import struct
import mimi
from mimi import limits, log

HOSTS = ["pool.ntp.org", "time.cloudflare.com"]  # tests point these at a fake server
PORT = 123
NTP_TO_UNIX = 2208988800  # 1900-01-01 -> 1970-01-01
ERA = 1 << 32  # NTP seconds wrap in 2036


class NTPError(Exception):
    pass


class Mismatch(NTPError):
    """A datagram that does not answer our request (stray or forged)."""


def request():
    """-> (48-byte client packet, its 8-byte transmit stamp to match the reply)."""
    pkt = bytearray(48)
    pkt[0] = 0x23  # LI 0, version 4, mode 3 (client)
    stamp = os.urandom(8)
    pkt[40:48] = stamp
    return pkt, stamp


def parse(data, stamp=None):
    """Server reply -> Unix time in whole seconds (an int: the ESP32 port's floats are
    32-bit, so a float of today's Unix time is only good to 128 s). NTPError for
    anything a server must not send."""
    if len(data) < 48:
        raise NTPError("short reply (%d bytes)" % len(data))
    li, mode, stratum = data[0] >> 6, data[0] & 7, data[1]
    if mode != 4:
        raise NTPError("not a server reply (mode %d)" % mode)
    if li == 3 or stratum == 0 or stratum > 15:
        raise NTPError("server not synchronised (kiss-o'-death or stratum %d)" % stratum)
    if stamp is not None and bytes(data[24:32]) != bytes(stamp):
        raise Mismatch("reply does not answer our request")
    secs, frac = struct.unpack("!II", data[40:48])
    if secs == 0:
        raise NTPError("no transmit time")
    if secs < 0x80000000:  # era 1: after 2036-02-07
        secs += ERA
    return secs - NTP_TO_UNIX + (frac >> 31)  # rounded to the nearest second


def _answer(data, stamp):
    try:
        return parse(data, stamp)
    except Mismatch:
        return None  # a stray or forged datagram: keep waiting for ours


async def aquery(host, port=PORT, timeout_s=limits.NTP_TIMEOUT_S):
    """One SNTP query -> Unix time, without blocking the loop while waiting."""
    from mimi.net import dns

    pkt, stamp = request()
    try:
        addr = socket.getaddrinfo(await dns.resolve(host), port, 0, socket.SOCK_DGRAM)[0][-1]
        try:
            return await dns.exchange(addr, pkt, lambda d: _answer(d, stamp), timeout_s * 1000)
        except OSError as e:
            if e.errno == dns.ETIMEDOUT:
                raise NTPError("no reply from %s within %ds" % (host, timeout_s))
            raise
    finally:
        mimi.drop("net.dns")  # (loaded for the query; its cache stays, on mimi.net)


async def sync_once(apply, hosts=None, port=None):
    """Ask each server in turn and apply(unix time) the first answer -> None, else why
    the last one failed (ntp.sync_once(): the resident side, which sets the clock)."""
    why = None
    for host in hosts or HOSTS:
        try:
            apply(await aquery(host, port or PORT))
            return None
        except (OSError, NTPError, IndexError) as e:
            why = "%s: %s" % (host, e)
            log.warning("ntp", "sync with %s failed: %s", host, e)
    return why
