# The analogue types on the ESP32-S3's ADC1 (GPIO1-10; types.py refuses ADC2, which
# reads nothing while WiFi is on): analog_in (volts, or scaled to a unit), ntc (a 10 k
# thermistor in a divider, B-parameter equation), ldr (a light-dependent resistor in a
# divider, rough lux), soil (a capacitive probe: wetter = lower volts, calibrated dry/wet).
# Volts come from read_uv() (the chip's eFuse calibration), averaged over ADC_SAMPLES
# after a few thrown away (the first after a pause read high).
# (Constants are const() or written where they are used: every module-level name of a
# .mpy stays in MicroPython's qstr pool for good once any device of the module is read.)
import math
from micropython import const
from mimi import board, limits
from mimi.devices.table import Fault, qty, num

_WARM = const(4)
HINT = "the wiring (the signal to the GPIO, the divider's ends to 3V3 and GND)"


class Analog:
    HINT = HINT

    def __init__(self, dev):
        self.dev = dev
        p = self.p = dev.params
        # dB -> the ADC's attenuation and its calibrated range, V (S3 datasheet Table 5-6)
        atten, self.top = {"0": ("ATTN_0DB", 0.85), "2.5": ("ATTN_2_5DB", 1.1), "6": ("ATTN_6DB", 1.6),
                           "11": ("ATTN_11DB", 2.9)}[p["atten"]]
        self.adc = board.ADC(p["pin"], atten=getattr(board.ADC, atten))

    def volts(self):
        adc = self.adc
        for _ in range(_WARM):
            adc.read_uv()
        n = limits.ADC_SAMPLES
        return sum(adc.read_uv() for _ in range(n)) / n / 1e6

    def divider(self, v, inverted):
        """The sensor's resistance in a divider with rfix: the sensor on the GND side
        (inverted: on the 3V3 side). Fault at the rails: nothing to compute from."""
        vcc = self.p["vcc"]
        if v <= 0.02 or v >= min(vcc, self.top) - 0.02:
            raise Fault("range", "%s V on GPIO%d, at the end of the range: the %s or its resistor "
                        "is open or shorted%s" % (num(v, 2), self.p["pin"], self.dev.type,
                                                  "" if v <= 0.02 else ", or the input is above %s V "
                                                  "(atten %s dB)" % (self.top, self.p["atten"])))
        r = self.p["rfix"]
        return r * (vcc - v) / v if inverted else r * v / (vcc - v)

    def read(self):
        v = self.volts()
        p = self.p
        typ = self.dev.type
        if typ == "ntc":
            r = self.divider(v, p["inverted"])
            t = 1 / (1 / 298.15 + math.log(r / p["r0"]) / p["beta"]) - 273.15  # (kelvin; r0 at 25 °C)
            return (qty("", t, "°C"),)
        if typ == "ldr":  # LDR on the 3V3 side by default: more light, more volts
            r = self.divider(v, not p["inverted"])
            lux = 10 * (p["r10"] / r) ** (1 / p["gamma"])
            return (("", lux, "about %s lx" % num(lux, 0 if lux >= 10 else 1)),)
        if typ == "soil":
            dry, wet = p["dry"], p["wet"]
            pct = (dry - v) / (dry - wet) * 100 if dry != wet else 0
            return qty("", min(max(pct, 0), 100), "%", 0), qty("probe", v, "V", 2)
        if p["max"] != p["min"]:  # analog_in scaled: vmin..vmax -> min..max
            span = p["vmax"] - p["vmin"] or 1
            x = p["min"] + (v - p["vmin"]) * (p["max"] - p["min"]) / span
            return (qty("", x, p["unit"], 2),)
        return (qty("", v, "V", 3),)

    def set(self, value):
        """soil: "dry" (the probe in air now) or "wet" (in water now) calibrates it."""
        w = str(value).strip().lower()
        if self.dev.type != "soil" or w not in ("dry", "wet"):
            raise Fault("value", "%s is a sensor (%s): device_read it%s" % (
                self.dev.name, self.dev.type, "; to calibrate set dry (probe in air) or wet (in water)"
                if self.dev.type == "soil" else ""))
        v = round(self.volts(), 2)
        other = self.p["wet" if w == "dry" else "dry"]
        if abs(v - other) < 0.1:
            raise Fault("value", "%s reads %s V, too close to its %s calibration (%s V): is the probe "
                        "in %s?" % (self.dev.name, num(v, 2), "wet" if w == "dry" else "dry", other,
                                    "air" if w == "dry" else "water"))
        self.p[w] = v
        self.dev.dirty = True
        return self.read()


def make(dev):
    return Analog(dev)
