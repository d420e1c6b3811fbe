# RFC 6455 pieces of the gateway and the WebSocket client (lib/mimi/net/wsproto.py) under MicroPython.
import struct
from support import raises
from mimi import limits
from mimi.net import wsproto as wp, wsread as wr, wshandshake as wh
from test_net import reader

KEY = b"\x37\xfa\x21\x3d"


def test_accept_key_rfc_example():
    assert wh.accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    assert wh.key_ok("dGhlIHNhbXBsZSBub25jZQ==")
    assert not wh.key_ok("short")
    assert not wh.key_ok("not base64 at all!!")


def test_mask_rfc_example_and_roundtrip():
    # RFC 6455 §5.7: masked "Hello"
    masked = bytes([0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58])
    assert wp.frame(wp.TEXT, b"Hello", mask_key=KEY) == masked
    assert wp.frame(wp.TEXT, "Hello") == b"\x81\x05Hello"
    assert wp.mask(wp.mask(b"\x00\x00abc\x00", KEY), KEY) == b"\x00\x00abc\x00"
    assert wp.mask(b"", KEY) == b""


async def test_read_masked_frame():
    masked = bytes([0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58])
    assert await wr.read_frame(reader(masked), 100) == (True, wp.TEXT, b"Hello")


async def test_lengths_7_16_64_bit():
    for n in (0, 1, 125, 126, 127, 65535, 65536, 70000):
        payload = bytes(i & 0xFF for i in range(n))
        f = wp.frame(wp.BINARY, payload, mask_key=KEY)
        if n < 126:
            assert f[1] == 0x80 | n
        elif n < 65536:
            assert f[1] == 0x80 | 126 and struct.unpack(">H", f[2:4])[0] == n
        else:
            assert f[1] == 0x80 | 127 and struct.unpack(">Q", f[2:10])[0] == n
        fin, op, got = await wr.read_frame(reader(f, step=1000), 100000)
        assert (fin, op) == (True, wp.BINARY) and got == payload, n
    # server frames: unmasked, same length encodings
    assert wp.frame(wp.TEXT, b"x" * 126)[:4] == b"\x81\x7e\x00\x7e"
    assert wp.frame(wp.TEXT, b"x" * 65536)[:10] == b"\x81\x7f" + struct.pack(">Q", 65536)


async def test_oversized_declared_length_refused_before_payload():
    # 64-bit length of 1 TB and no payload at all: must fail on the header alone.
    f = bytes([0x81, 0xFF]) + struct.pack(">Q", 1 << 40) + KEY
    e = await _err(reader(f), 16384)
    assert e.code == wp.TOO_BIG and e.skip == 1 << 40
    f = wp.frame(wp.TEXT, b"y" * 16385, mask_key=KEY)
    e = await _err(reader(f), 16384)
    assert e.code == wp.TOO_BIG and e.skip == 16385
    assert (await wr.read_frame(reader(wp.frame(wp.TEXT, b"y" * 16384, mask_key=KEY)), 16384))[2] == b"y" * 16384


async def _err(r, limit):
    try:
        await wr.read_frame(r, limit)
    except wp.ProtocolError as e:
        return e
    raise AssertionError("no ProtocolError")


async def test_protocol_violations():
    e = await _err(reader(wp.frame(wp.TEXT, b"hi")), 100)  # unmasked client frame
    assert e.code == wp.PROTOCOL and "mask" in e.reason and e.skip == 2
    bad_rsv = bytearray(wp.frame(wp.TEXT, b"hi", mask_key=KEY))
    bad_rsv[0] |= 0x40
    assert (await _err(reader(bytes(bad_rsv)), 100)).code == wp.PROTOCOL
    bad_op = bytearray(wp.frame(wp.TEXT, b"hi", mask_key=KEY))
    bad_op[0] = 0x83
    assert (await _err(reader(bytes(bad_op)), 100)).code == wp.PROTOCOL
    long_ping = wp.frame(wp.PING, b"p" * 126, mask_key=KEY)
    assert (await _err(reader(long_ping), 1000)).code == wp.PROTOCOL
    frag_ping = wp.frame(wp.PING, b"p", fin=False, mask_key=KEY)
    assert (await _err(reader(frag_ping), 1000)).code == wp.PROTOCOL
    r = reader(wp.frame(wp.TEXT, b"abc", mask_key=KEY)[:5])
    try:
        await wr.read_frame(r, 100)
        raise AssertionError("truncated frame accepted")
    except EOFError:
        pass


async def test_control_frames_parse():
    ping = wp.frame(wp.PING, b"abc", mask_key=KEY)
    close = wp.frame(wp.CLOSE, struct.pack(">H", 1000) + b"bye", mask_key=KEY)
    r = reader(ping + close)
    assert await wr.read_frame(r, 100) == (True, wp.PING, b"abc")
    fin, op, payload = await wr.read_frame(r, 100)
    assert op == wp.CLOSE and wr.close_code(payload) == 1000
    assert wr.close_code(b"") == 1005
    assert raises(wp.ProtocolError, wr.close_code, b"\x03").code == wp.PROTOCOL
    assert raises(wp.ProtocolError, wr.close_code, struct.pack(">H", 1005)).code == wp.PROTOCOL
    assert raises(wp.ProtocolError, wr.close_code, struct.pack(">H", 999)).code == wp.PROTOCOL
    assert wr.close_code(struct.pack(">H", 4000)) == 4000
    assert wp.close_frame(1009, "too big") == b"\x88\x09\x03\xf1too big"


def test_fragmentation():
    a = wr.Assembler(10)
    assert a.feed(True, wp.TEXT, b"whole") == (wp.TEXT, b"whole")
    assert a.feed(False, wp.TEXT, b"ab") is None
    assert a.feed(False, wp.CONT, b"cd") is None
    assert a.feed(True, wp.CONT, b"ef") == (wp.TEXT, b"abcdef")
    # control frames may come between fragments: the caller handles them, the
    # assembler is not told; a new data frame inside a message is an error
    assert a.feed(False, wp.TEXT, b"x") is None
    assert raises(wp.ProtocolError, a.feed, True, wp.TEXT, b"y").code == wp.PROTOCOL
    b = wr.Assembler(10)
    assert raises(wp.ProtocolError, b.feed, True, wp.CONT, b"z").code == wp.PROTOCOL
    c = wr.Assembler(10)
    assert c.feed(False, wp.TEXT, b"123456") is None
    assert raises(wp.ProtocolError, c.feed, True, wp.CONT, b"78901").code == wp.TOO_BIG


def test_endless_empty_continuations_do_not_grow_the_assembler():
    # issue 16 item 7: empty continuation frames cost nothing against the size cap, so
    # they piled up in the assembler for ever; now they are not kept and a message
    # has at most WS_FRAGMENTS_MAX frames
    a = wr.Assembler(10)
    assert a.feed(False, wp.TEXT, b"ab") is None
    for _ in range(limits.WS_FRAGMENTS_MAX - 2):
        assert a.feed(False, wp.CONT, b"") is None
    assert len(a.parts) == 1
    assert a.feed(True, wp.CONT, b"") == (wp.TEXT, b"ab")  # the last one allowed
    a.feed(False, wp.TEXT, b"x")
    e = None
    for _ in range(limits.WS_FRAGMENTS_MAX + 1):
        try:
            a.feed(False, wp.CONT, b"")
        except wp.ProtocolError as err:
            e = err
            break
    assert e is not None and e.code == wp.TOO_BIG and len(a.parts) <= 1


def test_token_checks():
    assert wh.token_ok("s3cret", {"token": "s3cret"}, {})
    assert wh.token_ok("s3cret", {}, {"authorization": "Bearer s3cret"})
    assert wh.token_ok("s3cret", {}, {"authorization": "bearer  s3cret "})
    assert not wh.token_ok("s3cret", {"token": "s3cre"}, {})
    assert not wh.token_ok("s3cret", {"token": "s3creT"}, {})
    assert not wh.token_ok("s3cret", {}, {"authorization": "Basic s3cret"})
    assert not wh.token_ok("s3cret", {}, {})
    assert not wh.token_ok("", {"token": ""}, {})  # auth off: nothing counts as a token


def test_origin_checks():
    hosts = {"192.168.1.7", "127.0.0.1"}
    assert wh.origin_ok(None, hosts, 18789)  # not a browser
    assert wh.origin_ok("http://192.168.1.7:18789", hosts, 18789)
    assert wh.origin_ok("HTTP://127.0.0.1:18789", hosts, 18789)
    assert not wh.origin_ok("http://192.168.1.7:8080", hosts, 18789)
    assert not wh.origin_ok("http://evil.example:18789", hosts, 18789)
    assert not wh.origin_ok("https://192.168.1.7:18789", hosts, 18789)
    assert not wh.origin_ok("null", hosts, 18789)
    assert not wh.origin_ok("http://192.168.1.7", hosts, 18789)
    assert wh.origin_ok("http://192.168.1.7", hosts, 80)
    assert not wh.origin_ok("http://user@192.168.1.7:18789", hosts, 18789)
    assert not wh.origin_ok("http://192.168.1.7:18789.evil.example", hosts, 18789)


def test_upgrade_response():
    u = wh.upgrade_response("dGhlIHNhbXBsZSBub25jZQ==")
    assert b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n" in u
    assert u.startswith(b"HTTP/1.1 101 ")


def test_chat_id_rules():
    from mimi.channels.websocket.incoming import chat_id_ok

    assert chat_id_ok("abc_DEF-123") == "abc_DEF-123"
    assert chat_id_ok(42) == "42"
    assert chat_id_ok("x" * 31) == "x" * 31
    for bad in ("x" * 32, "", "a/b", "../x", "a b", "tg_1\n", True, None, 1.5, ["a"], "\u4f60"):
        assert chat_id_ok(bad) is None, bad
