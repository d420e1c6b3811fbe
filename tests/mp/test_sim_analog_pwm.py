# The host's ADC, PWM and time_pulse_us with the parts on them, against the chip's
# and the parts' datasheets (reference/hardware.md §1.5-1.6, 3.8-3.13): attenuation
# ranges and saturation at 12 bits, ADC2 while WiFi is on, an NTC's and an LDR's
# divider, a soil probe; LEDC channels, timers and resolution, a servo's angle, a
# buzzer's tones; an HC-SR04's echo width.
import math
import time
from support import raises
from mimi import board
from mimi.devices.sim import parts

ADC = board.ADC


def uv(pin, atten=3):
    return ADC(pin, atten=atten).read_uv()


def test_adc_ranges_and_saturation():
    parts.attach("analog_in", pin=4, volts=1.0)
    assert ADC(4, atten=ADC.ATTN_0DB).read() == 4095  # over the 0 dB range (950 mV)
    a = ADC(4, atten=ADC.ATTN_2_5DB)  # 0..1250 mV
    assert a.read() == round(1000 * 4095 / 1250)
    assert abs(a.read_uv() - 1000000) <= 1000 and a.read_uv() % 1000 == 0
    r = a.read()
    assert a.read_u16() == (r << 4 | r >> 8)
    a.atten(ADC.ATTN_6DB)
    assert a.read() == round(1000 * 4095 / 1750)
    parts.set("analog_in@4", volts=3.2)
    assert ADC(4, atten=ADC.ATTN_11DB).read() == 4095  # over 3.1 V: full scale
    assert ADC(4, atten=ADC.ATTN_11DB).read_u16() == 65535
    assert "atten" in str(raises(TypeError, ADC, 4))
    raises(ValueError, ADC, 21, atten=3)  # no ADC on GPIO21
    assert "has no ADC" in str(raises(ValueError, parts.attach, "analog_in", pin=21))
    assert "0..3.6" in str(raises(ValueError, parts.set, "analog_in@4", volts=5))


def test_adc2_while_wifi_is_on():
    parts.attach("analog_in", pin=12, volts=2.0)
    w = board.wlan()
    w.active(False)
    first = ADC(12, atten=3).read()
    assert first == round(2000 * 4095 / 3100)
    w.active(True)  # ADC2 belongs to WiFi now: the last value, whatever the pin has
    parts.set("analog_in@12", volts=0.5)
    assert ADC(12, atten=3).read() == first
    assert ADC(13, atten=3).read() == 0  # never read before WiFi: 0
    parts.attach("analog_in", pin=3, volts=0.5)
    assert ADC(3, atten=3).read() == round(500 * 4095 / 3100)  # ADC1 is not affected
    w.active(False)
    assert ADC(12, atten=3).read() == round(500 * 4095 / 3100)


def ntc_r(v, vcc=3.3, r_fixed=10000):
    return r_fixed * v / (vcc - v)  # NTC to GND, fixed resistor to Vcc (§3.11)


def test_ntc_divider():
    parts.attach("ntc", pin=5, temp=0)
    for temp, ohms in ((0, 33600), (25, 10000), (50, 3590)):  # the B3950 check values
        parts.set("ntc@5", temp=temp)
        r = ntc_r(uv(5) / 1e6)
        assert abs(r - ohms) / ohms < 0.01, (temp, r)
        t = 1 / (1 / 298.15 + math.log(r / 10000) / 3950) - 273.15
        assert abs(t - temp) < 0.3, (temp, t)
    parts.attach("ntc", pin=6, temp=25, wiring="vcc", r_fixed=4700)
    v = uv(6) / 1e6
    assert abs(v - 3.3 * 4700 / 14700) < 0.002


def test_ldr_and_soil():
    parts.attach("ldr", pin=7, lux=10)
    v = uv(7) / 1e6  # LDR to 3.3 V, 10 kΩ to GND: brighter, higher
    r = 10000 * (3.3 - v) / v
    assert abs(r - 15000) / 15000 < 0.01
    parts.set("ldr@7", lux=200)
    v2 = uv(7) / 1e6
    r2 = 10000 * (3.3 - v2) / v2
    assert v2 > v and abs(10 * (15000 / r2) ** (1 / 0.7) - 200) / 200 < 0.02
    parts.set("ldr@7", lux=2000)  # 15 kΩ·(10/2000)^0.7 = 370 Ω: over the 11 dB range
    assert ADC(7, atten=3).read() == 4095
    parts.set("ldr@7", lux=0)
    assert uv(7) < 40000  # dark: about 1 MΩ
    parts.attach("soil", pin=8, moisture=0)
    assert abs(uv(8) - 2300000) <= 1000  # in air
    parts.set("soil@8", moisture=100)
    assert abs(uv(8) - 700000) <= 1000  # in water
    parts.set("soil@8", moisture=50)
    assert abs(uv(8) - 1500000) <= 1000
    assert board.Pin(8, board.Pin.IN).value() in (0, 1)


def test_pwm_seam_limits_and_resolution():
    assert "duty" in str(raises(TypeError, board.PWM, 5, freq=1000))
    raises(TypeError, board.PWM, 5, duty_u16=100)
    raises(ValueError, board.PWM, 5, freq=50000000, duty_u16=0)
    p = board.PWM(5, freq=50, duty_u16=32768)
    assert p.duty_u16() == 32768 and p.freq() == 50
    assert parts.get("pin5")["mode"] == "pwm"
    fast = board.PWM(6, freq=300000, duty_u16=1000)  # 8 bits at 300 kHz
    assert fast.duty_u16() == 1024
    pwms = [board.PWM(pin, freq=50, duty_u16=0) for pin in (7, 8, 9, 10, 11, 12)]
    assert str(raises(RuntimeError, board.PWM, 13, freq=50, duty_u16=0)) == "out of PWM channels:8"
    pwms[0].deinit()
    assert parts.get("pin7") == {"mode": "out", "level": 0, "pull": None}
    pwms[1].freq(1000)
    pwms[2].freq(2000)
    assert str(raises(RuntimeError, pwms[3].freq, 3000)) == "out of PWM timers:4"
    p.duty_ns(1000000)
    assert abs(p.duty_ns() - 1000000) < 2500  # 13 bits at 50 Hz: 2.44 µs steps


def test_servo_and_pwm_load():
    parts.attach("servo", pin=15)
    st = parts.get("servo@15")
    assert st["angle"] is None and "no pulses" in st["note"]
    s = board.PWM(15, freq=50, duty_ns=1500000)
    assert parts.get("servo@15")["angle"] == 90
    s.duty_ns(2500000)
    s.duty_ns(500000)
    assert parts.get("servo@15")["moves"] == [90, 180, 0]
    s.duty_ns(3000000)
    st = parts.get("servo@15")
    assert st["angle"] == 180 and "end stop" in st["note"]
    s.freq(5000)  # what machine.PWM(pin) would start with
    st = parts.get("servo@15")
    assert st["angle"] is None and "50 Hz" in st["note"]
    parts.attach("pwm", pin=16)
    board.PWM(16, freq=1000, duty_u16=16384)
    st = parts.get("pwm@16")
    assert st["freq"] == 1000 and st["duty"] == 25.0


def test_buzzer_tones():
    parts.attach("buzzer", pin=17)
    b = board.PWM(17, freq=2000, duty_u16=32768)
    assert parts.get("buzzer@17")["tone_hz"] == 2000
    time.sleep_ms(100)
    b.freq(1000)
    time.sleep_ms(50)
    b.duty_u16(0)
    st = parts.get("buzzer@17")
    assert st["tone_hz"] is None
    assert [hz for hz, _ in st["tones"]] == [2000, 1000]
    assert 98 <= st["tones"][0][1] < 1000 and st["tones"][1][1] >= 48  # sleep_ms counts whole ms
    parts.attach("buzzer", pin=18, active=1)
    p = board.Pin(18, board.Pin.OUT, value=1)
    time.sleep_ms(30)
    p.value(0)
    assert [hz for hz, _ in parts.get("buzzer@18")["tones"]] == [2300]


def ping(trig, echo, timeout=30000):
    """The echo width, best of 3: time_pulse_us measures from its call when the echo has
    already risen, as the chip's does; here the host's scheduler can make that late."""
    out = []
    for _ in range(3):
        trig.value(1)
        time.sleep_us(15)
        trig.value(0)
        out.append(board.time_pulse_us(echo, 1, timeout))
        time.sleep_ms(60 + timeout // 1000)
    return max(out)


def test_hcsr04_echo_widths():
    parts.attach("hcsr04", trig=12, echo=13, distance=50)
    trig = board.Pin(12, board.Pin.OUT, value=0)
    echo = board.Pin(13, board.Pin.IN)
    assert board.time_pulse_us(echo, 1, 5000) == -2  # nothing sent: no pulse
    us = ping(trig, echo)
    assert abs(us - 50 * 58) <= 2 and abs(us / 58 - 50) < 0.1
    parts.set("hcsr04@12", distance=123.4)
    assert abs(ping(trig, echo) / 58 - 123.4) < 0.1
    parts.set("hcsr04@12", distance=None)  # nothing in range: ~38 ms
    assert ping(trig, echo) == -1  # longer than the timeout: timed out during the pulse
    assert 37900 <= ping(trig, echo, 60000) <= 38100
    parts.set("hcsr04@12", distance=500)  # past its 4 m range: the same
    assert ping(trig, echo) == -1
    parts.set("hcsr04@12", fault="nack", distance=50)  # unplugged: no echo at all
    assert ping(trig, echo) == -2
    assert parts.get("hcsr04@12")["echo_volts"] == 3.3
    parts.attach("hcsr04", trig=14, echo=15, divider=0)
    assert "5 V echo on GPIO15" in parts.get("hcsr04@14")["note"]
