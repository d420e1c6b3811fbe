# The host's simulated pins and the parts on them, through the board seam: Pin
# levels and soft IRQs, a button by its wiring, outputs seen from the load's side
# (digital out, relay), WS2812 LEDs decoding the GRB(W) bits bitstream sends, and
# the registry's errors (what tools/sim --part prints).
from support import raises
from mimi import board
from mimi.devices.sim import parts

Pin = board.Pin


class Hits:
    """An IRQ handler: the pins it was called for (it runs later than the edge, as a
    soft IRQ does, so the level it would read is not the edge's)."""

    def __init__(self):
        self.seen = []

    def __call__(self, pin):
        self.seen.append(pin.id)


def run_scheduled():
    for _ in range(10):  # soft IRQs run between bytecodes of the main thread
        pass


def test_pin_table_and_modes():
    raises(ValueError, Pin, 22)  # GPIO22-25 and 26-32 are not in the S3 firmware's table
    raises(ValueError, Pin, 30)
    p = Pin(5, Pin.OUT, value=1)
    assert parts.get("pin5") == {"mode": "out", "level": 1, "pull": None}
    q = Pin(5)  # only the id: the pin is not touched
    assert q.value() == 1 and parts.get("pin5")["mode"] == "out"
    p.init(Pin.IN, Pin.PULL_DOWN)
    assert p.value() == 0 and parts.get("pin5") == {"mode": "in", "level": 0, "pull": "down"}
    p.init(Pin.IN, None)  # no pull: it floats and keeps its level
    parts.set("pin5", 1)
    assert p.value() == 1
    parts.set("pin5", None)
    assert p.value() == 1
    od = Pin(6, Pin.OPEN_DRAIN, Pin.PULL_UP)
    assert od.value() == 1
    od.value(0)
    assert od.value() == 0 and parts.get("pin6")["mode"] == "open_drain"


def test_irq_fires_on_sim_set_edges():
    hits = Hits()
    p = Pin(4, Pin.IN)
    p.irq(hits, Pin.IRQ_RISING)
    parts.set("pin4", 1)
    run_scheduled()
    parts.set("pin4", 1)  # no edge
    parts.set("pin4", 0)  # falling: not asked for
    run_scheduled()
    assert hits.seen == [4]
    p.irq(hits, Pin.IRQ_FALLING | Pin.IRQ_RISING)
    parts.set("pin4", 1)
    parts.set("pin4", 0)
    run_scheduled()
    assert hits.seen == [4, 4, 4]
    p.irq(None)
    parts.set("pin4", 1)
    run_scheduled()
    assert len(hits.seen) == 3


def test_button_to_gnd_with_pull_up():
    assert parts.attach("button", pin=4) == "button@4"
    hits = Hits()
    p = Pin(4, Pin.IN)
    assert p.value() == 1  # released: the pull-up
    p.irq(hits, Pin.IRQ_FALLING | Pin.IRQ_RISING)
    parts.set("button@4", pressed=1)
    assert p.value() == 0
    run_scheduled()
    parts.set("button@4", pressed=0)
    run_scheduled()
    assert hits.seen == [4, 4]
    assert parts.get("button@4") == {"pressed": 0, "level": 1, "presses": 1}
    e = raises(ValueError, parts.set, "pin4", 1)
    assert "button@4" in str(e)


def test_button_wirings():
    parts.attach("button", pin=7, wiring="vcc", pull="none")
    p = Pin(7, Pin.IN, Pin.PULL_DOWN)  # the MCU's pull-down holds it released
    assert p.value() == 0
    parts.set("button@7", pressed=1)
    assert p.value() == 1
    parts.set("button@7", pressed=0)
    assert p.value() == 0
    p.init(Pin.IN, None)  # no pull anywhere: released, the pin floats at its last level
    parts.set("button@7", pressed=1)
    parts.set("button@7", pressed=0)
    assert p.value() == 1


def test_button_bounce_gives_extra_edges():
    parts.attach("button", pin=8, bounce=3)
    hits = Hits()
    p = Pin(8, Pin.IN)
    p.irq(hits, Pin.IRQ_FALLING)
    parts.set("button@8", pressed=1)
    run_scheduled()
    assert len(hits.seen) == 4 and p.value() == 0  # 3 bounces, then the press


def test_relay_and_digital_out_seen_from_the_load():
    parts.attach("relay", pin=5, active_low=1)
    parts.attach("digital_out", pin=6)
    assert parts.get("relay@5")["on"] is False  # not driven: the module's input floats high
    r = Pin(5, Pin.OUT, value=1)  # off first, then an output: no glitch
    assert parts.get("relay@5")["on"] is False and parts.get("relay@5")["level"] == 1
    r.value(0)
    st = parts.get("relay@5")
    assert st["on"] is True and st["switches"] == 1
    r.value(0)
    r.value(1)
    assert parts.get("relay@5")["switches"] == 2
    led = Pin(6, Pin.OUT)
    led.on()
    assert parts.get("digital_out@6")["on"] is True
    led.init(Pin.IN)
    assert parts.get("digital_out@6") ["level"] is None


def test_rgb_led_decodes_grb_bits():
    parts.attach("rgb_led", pin=48, n=3)
    assert parts.get("rgb_led@48") == [(0, 0, 0)] * 3
    board.bitstream(Pin(48, Pin.OUT), 0, (400, 850, 800, 450), bytes((10, 255, 0, 0, 0, 7)))
    assert parts.get("rgb_led@48") == [(255, 10, 0), (0, 0, 7), (0, 0, 0)]  # the third kept its colour
    np = board.neopixel(48, 3)
    np.fill((1, 2, 3))
    np[2] = (200, 100, 50)
    np.write()
    assert parts.get("rgb_led@48") == [(1, 2, 3), (1, 2, 3), (200, 100, 50)]
    assert np[2] == (200, 100, 50) and len(np) == 3
    # 400 kHz timing: a 0 bit's 800 ns high time reads as a 1 to a WS2812B: all white
    slow = board.neopixel(48, 3, timing=0)
    slow.fill((0, 0, 0))
    slow.write()
    assert parts.get("rgb_led@48") == [(255, 255, 255)] * 3


def test_rgbw_strip():
    parts.attach("rgb_led", pin=38, n=2, bpp=4)
    np = board.neopixel(38, 2, bpp=4)
    np[0] = (1, 2, 3, 4)
    np[1] = (0, 0, 0, 255)
    np.write()
    assert parts.get("rgb_led@38") == [(1, 2, 3, 4), (0, 0, 0, 255)]
    assert np.buf[:4] == bytes((2, 1, 3, 4))  # GRBW on the wire


def test_registry_errors():
    e = raises(ValueError, parts.attach, "lamp", pin=4)
    assert "unknown part type 'lamp'" in str(e) and "sht3x" in str(e) and "rgb_led" in str(e)
    assert "needs pin=" in str(raises(ValueError, parts.attach, "button"))
    assert "not a GPIO" in str(raises(ValueError, parts.attach, "button", pin=23))
    assert "no key 'colour'" in str(raises(ValueError, parts.attach, "rgb_led", pin=48, colour=1))
    assert "whole number" in str(raises(ValueError, parts.attach, "rgb_led", pin=48, n=1.5))
    assert "bpp 3" in str(raises(ValueError, parts.attach, "rgb_led", pin=48, bpp=5))
    parts.attach("button", pin=4)
    assert "GPIO4 is taken by button@4" in str(raises(ValueError, parts.attach, "relay", pin=4))
    parts.attach("sht3x", sda=8, scl=9)
    e = raises(ValueError, parts.attach, "sht3x", sda=8, scl=9)
    assert "0x44 on I2C SDA 8 / SCL 9 is taken by sht3x@0x44" in str(e)
    assert "GPIO8 is taken by I2C" in str(raises(ValueError, parts.attach, "button", pin=8))
    assert "no part 'button@5'" in str(raises(ValueError, parts.set, "button@5", pressed=1))
    assert "button values: pressed, fault" in str(raises(ValueError, parts.set, "button@4", colour=1))
    assert parts.names() == ["button@4", "sht3x@0x44"]
    parts.detach("button@4")
    assert parts.attach("relay", pin=4) == "relay@4"


def test_parse_part_specs():
    assert parts.parse("sht3x:sda=8,scl=9,addr=0x44,temp=21.5") == (
        "sht3x", {"sda": 8, "scl": 9, "addr": 0x44, "temp": 21.5})
    assert parts.parse("button:pin=4,wiring=vcc, pull = none") == (
        "button", {"pin": 4, "wiring": "vcc", "pull": None})
    assert parts.get(parts.attach_spec("button:pin=5,pull=none"))["level"] == 0
    assert parts.parse("rgb_led") == ("rgb_led", {})
    assert "'pin4' is not key=value" in str(raises(ValueError, parts.parse, "button:pin4"))
    assert parts.attach_spec("button:pin=4,pressed=1") == "button@4"
    assert Pin(4).value() == 0


def test_chip_temperature():
    assert board.mcu_temperature() == 37
    parts.set("chip_temp", temp=52.4)
    assert board.mcu_temperature() == 52
    parts.set("chip_temp", temp=95)  # the sensor's range is set to -10..80
    assert board.mcu_temperature() == 80
    assert parts.get("chip_temp") == {"temp": 95, "reads": 80}
