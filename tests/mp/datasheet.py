# Checks written from the parts' datasheets for the simulated-part tests
# (tests/mp/test_sim_*.py), independent of mimi/devices/sim/.


def sensirion_crc(data):
    """Sensirion / ASAIR CRC-8: polynomial 0x31 (x^8 + x^5 + x^4 + 1), init 0xFF, MSB first;
    CRC(BE EF) = 0x92."""
    crc = 0xFF
    for b in data:
        for i in range(8):
            bit = (crc >> 7) ^ (b >> (7 - i) & 1)
            crc = (crc << 1) & 0xFF
            if bit:
                crc ^= 0x31
    return crc


def maxim_crc(data):
    """Maxim 1-Wire CRC-8: x^8 + x^5 + x^4 + 1, LSB first, init 0; the CRC over a ROM or
    scratchpad with its own CRC byte is 0."""
    crc = 0
    for b in data:
        for i in range(8):
            mix = (crc ^ (b >> i)) & 1
            crc >>= 1
            if mix:
                crc ^= 0x8C
    return crc


def soon_after(first, then, window_ms, tries=10):
    """then() right after first(): what it returned or raised, from a try in which the
    two ran less than window_ms apart. A test of a part's short deaf window cannot judge
    a try the host's scheduler stretched past it, so such a try is made again."""
    import time

    for _ in range(tries):
        first()
        t0 = time.ticks_us()
        try:
            out = then()
        except Exception as e:  # noqa: B902 - handed to the test
            out = e
        if time.ticks_diff(time.ticks_us(), t0) < window_ms * 1000:
            return out
        time.sleep_ms(window_ms + 20)
    raise AssertionError("no try ran within %d ms" % window_ms)
