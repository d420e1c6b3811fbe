# The device drivers' hardware seam on the host, its pin-signal half (board/host_io.py
# has I2C and bitstream, and reaches these through its __getattr__): machine.ADC, PWM,
# time_pulse_us, dht_readinto and esp32.mcu_temperature with the firmware's APIs and
# errors, acting on the simulated parts wired to the pins (board/host_pins.py
# SIM_WIRES). The calls take the time the chip's take, sleeping it.
import time
from mimi.board.host_io import _pin
from mimi.board.host_pins import SIM_WIRES, Pin, settle

_ETIMEDOUT = 110
CHIP_TEMP = 37
SIM_CHIP = {"temp": CHIP_TEMP}  # the die's temperature (sim_set("chip_temp", temp=...))
SIM_PWM = {}  # pin -> its running PWM


# Input ranges per attenuation on the S3 (ESP-IDF's ADC page, reference/hardware.md §1.5)
_ADC_RANGE_MV = (950, 1250, 1750, 3100)
_ADC2_LAST = {}  # ADC2 pin -> the last raw value read while WiFi was off


def _wifi_on():
    from mimi.board import host

    return host._wlan is not None and host._wlan.active()


class ADC:
    """machine.ADC on the ESP32-S3: 12 bits, GPIO1-10 (ADC1) and 11-20 (ADC2); a
    voltage above the attenuation's range reads full scale. ADC2 is WiFi's while
    WiFi is on: a read then gives what the last read before it gave (0 if none),
    as MicroPython ignores the driver's error. atten= is required (board/esp32_io.py)."""

    ATTN_0DB = 0
    ATTN_2_5DB = 1
    ATTN_6DB = 2
    ATTN_11DB = 3

    def __init__(self, pin, *, atten=None):
        if atten is None:
            raise TypeError("ADC needs atten= (machine.ADC resets it to 11 dB without it)")
        n = _pin(pin)
        if not 1 <= n <= 20:
            raise ValueError("invalid Pin for ADC")
        self.pin = n
        self.atten(atten)

    def atten(self, atten):
        if atten not in (0, 1, 2, 3):
            raise ValueError("invalid attenuation")
        self._atten = atten

    def _raw(self):
        n = self.pin
        if n >= 11 and _wifi_on():
            return _ADC2_LAST.get(n, 0)
        part = SIM_WIRES.get(n)
        v = part.analog(n) if part is not None else None
        if v is None:  # nothing analogue on it: the pin's logic level
            v = 3.3 if settle(n) else 0.0
        raw = min(4095, max(0, round(v * 1000 * 4095 / _ADC_RANGE_MV[self._atten])))
        if n >= 11:
            _ADC2_LAST[n] = raw
        return raw

    def read(self):
        return self._raw()

    def read_u16(self):
        raw = self._raw()
        return raw << 4 | raw >> 8

    def read_uv(self):
        return round(self._raw() * _ADC_RANGE_MV[self._atten] / 4095) * 1000

    def deinit(self):
        pass


class PWM:
    """machine.PWM on the S3's LEDC: 1 Hz-40 MHz, 8 channels, 4 timers (distinct
    frequencies), duty resolution 13 bits at most and less as the frequency rises
    (80 MHz clock); freq= and a duty are required (board/esp32_io.py). deinit()
    idles the pin low."""

    def __init__(self, pin, *, freq=None, duty_u16=None, duty_ns=None):
        if freq is None:
            raise TypeError("PWM needs freq=")
        if duty_u16 is None and duty_ns is None:
            raise TypeError("PWM needs duty_u16= or duty_ns= (machine.PWM starts at 50 %)")
        n = _pin(pin)
        if n not in SIM_PWM and len(SIM_PWM) >= 8:
            raise RuntimeError("out of PWM channels:8")
        self.pin = n
        self._f = 0
        self.freq(freq)
        if duty_ns is not None:
            self.duty_ns(duty_ns)
        else:
            self.duty_u16(duty_u16)

    def _bits(self):
        bits = 1
        while bits < 13 and self._f << (bits + 1) <= 80000000:
            bits += 1
        return bits

    def freq(self, f=None):
        if f is None:
            return self._f
        if not 1 <= f <= 40000000:
            raise ValueError("frequency must be from 1Hz to 40MHz")
        others = {p._f for p in SIM_PWM.values() if p is not self}
        if f not in others and len(others) >= 4:
            raise RuntimeError("out of PWM timers:4")
        self._f = int(f)
        self._changed()

    def _ticks(self):
        return (self._u16 * (1 << self._bits()) + 32767) // 65535

    def duty_u16(self, d=None):
        if d is None:
            return min(65535, self._ticks() * 65536 >> self._bits())
        if not 0 <= d <= 65535:
            raise ValueError("duty_u16 must be from 0 to 65535")
        self._u16 = int(d)
        self._changed()

    def duty_ns(self, ns=None):
        if ns is None:
            return self._ticks() * 1000000000 // (self._f << self._bits())
        self.duty_u16(min(65535, round(ns * self._f * 65535 / 1000000000)))

    def pulse_us(self):
        """The high time the pin gives, at the duty's real resolution."""
        return self._ticks() * 1000000 / (self._f << self._bits())

    def _changed(self):
        if not hasattr(self, "_u16"):
            return
        SIM_PWM[self.pin] = self
        part = SIM_WIRES.get(self.pin)
        if part is not None and hasattr(part, "pwm"):
            part.pwm(self)

    def deinit(self):
        if SIM_PWM.get(self.pin) is self:
            del SIM_PWM[self.pin]
            Pin(self.pin, Pin.OUT, value=0)
            part = SIM_WIRES.get(self.pin)
            if part is not None and hasattr(part, "pwm"):
                part.pwm(None)


def time_pulse_us(pin, pulse_level, timeout_us=1000000):
    """machine.time_pulse_us: wait for the pin to reach pulse_level, then time how
    long it stays there: µs, -2 if it never got there, -1 if it stayed past timeout_us.
    Blocks for that time, as the chip's busy-wait does."""
    n = _pin(pin)
    part = SIM_WIRES.get(n)
    tl = part.timeline(n) if part is not None and hasattr(part, "timeline") else None
    level, edges = tl or (settle(n), ())
    want = 1 if pulse_level else 0
    t = start = 0
    left = 2
    i = 0
    while True:
        if level == want:
            want ^= 1
            left -= 1
            if not left:
                time.sleep_us(t)
                return t - start
            start = t
        if i >= len(edges) or edges[i] - start >= timeout_us:
            time.sleep_us(start + timeout_us)
            return -left
        t = edges[i]
        level ^= 1
        i += 1


def dht_readinto(pin, buf):
    """The firmware's DHT reader (MicroPython's drivers/dht/dht.c): the line high for
    250 ms, low for 18 ms (the start signal), released; then the sensor's 80 µs low,
    80 µs high and 40 bits (a high time over 48 µs is a 1) into buf[0:5].
    OSError(110) when the sensor does not answer."""
    if len(buf) < 5:
        raise ValueError("buffer too small")
    p = pin if not isinstance(pin, int) else Pin(pin)
    n = _pin(p)
    p.init(Pin.OPEN_DRAIN)
    p.value(1)
    time.sleep_ms(250)
    p.value(0)
    time.sleep_ms(18)
    p.value(1)
    part = SIM_WIRES.get(n)
    frame = part.dht_frame(18000) if part is not None and hasattr(part, "dht_frame") else None
    if frame is None:
        time.sleep_us(100)
        raise OSError(_ETIMEDOUT)
    high = 0
    for i in range(40):
        high += 70 if frame[i // 8] >> (7 - i % 8) & 1 else 27
    time.sleep_us(160 + 40 * 50 + high)
    for i in range(5):
        buf[i] = frame[i]


def mcu_temperature():
    """esp32.mcu_temperature(): the die's °C as an int, the sensor set to -10..80."""
    return min(80, max(-10, round(SIM_CHIP["temp"])))
