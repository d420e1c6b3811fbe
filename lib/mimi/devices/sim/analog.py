# Parts that put a voltage on an ADC pin (GPIO1-20), from their physics: a plain
# voltage; a 10 kΩ NTC thermistor (B-parameter equation R = R0·e^(B(1/T - 1/T0)),
# T0 = 25 °C) and an LDR (R = R10·(10/lux)^γ, GL5528-like: 8-20 kΩ at 10 lx, 1 MΩ dark)
# each in a divider with a fixed resistor, wiring saying which of the two goes to GND
# (reference/hardware.md §3.11-3.12); a capacitive soil probe (lower voltage when
# wetter, linear from its voltage in air to its voltage in water, §3.13). The ADC
# (board/host_signals.py) turns the volts into counts. Read as a digital input, the pin is
# high above 0.75 x 3.3 V and low below 0.25 x 3.3 V (the S3's VIH / VIL).
import math
from mimi.devices.sim.parts import PIN, Part


class Analog(Part):
    KEYS = (("pin", PIN), ("volts", 1.0))
    VALUES = ("volts",)

    def check(self):
        if not 1 <= self.pin <= 20:
            raise ValueError("%s: GPIO%d has no ADC (ADC1: GPIO1-10, ADC2: GPIO11-20)" % (self.type, self.pin))
        self.check_values()

    def check_values(self):
        if not 0 <= self.volts <= 3.6:
            raise ValueError("analog_in: volts is 0..3.6 (the pin's absolute maximum)")

    def out(self):
        return self.volts

    def volts_at(self):
        return min(3.6, max(0.0, self.out()))

    def analog(self, pin):
        return self.volts_at()

    def drive(self, pin):
        v = self.volts_at()
        return 1 if v >= 2.475 else 0 if v <= 0.825 else None

    def state(self):
        out = Part.state(self)
        out["pin_volts"] = round(self.volts_at(), 4)
        return out


class Divider(Analog):
    """A resistance r() in a divider with r_fixed from vcc: wiring gnd puts the sensor
    between the pin and GND, vcc between the pin and vcc."""

    def check_values(self):
        if self.wiring not in ("gnd", "vcc") or self.r_fixed <= 0 or not 0 < self.vcc <= 3.6:
            raise ValueError("%s: wiring is gnd or vcc, r_fixed > 0, vcc 0..3.6" % self.type)

    def out(self):
        r = self.r()
        return self.vcc * (r if self.wiring == "gnd" else self.r_fixed) / (r + self.r_fixed)


class NTC(Divider):
    KEYS = (("pin", PIN), ("temp", 25.0), ("r0", 10000.0), ("b", 3950.0), ("r_fixed", 10000.0),
            ("wiring", "gnd"), ("vcc", 3.3))
    VALUES = ("temp",)

    def check_values(self):
        Divider.check_values(self)
        if not -55 <= self.temp <= 150 or self.r0 <= 0 or self.b <= 0:
            raise ValueError("ntc: temp is -55..150 °C, r0 and b above 0")

    def r(self):
        return self.r0 * math.exp(self.b * (1 / (self.temp + 273.15) - 1 / 298.15))

    def state(self):
        out = Divider.state(self)
        out["ohms"] = round(self.r())
        return out


class LDR(Divider):
    KEYS = (("pin", PIN), ("lux", 100.0), ("r10", 15000.0), ("gamma", 0.7), ("r_dark", 1000000.0),
            ("r_fixed", 10000.0), ("wiring", "vcc"), ("vcc", 3.3))
    VALUES = ("lux",)

    def check_values(self):
        Divider.check_values(self)
        if not 0 <= self.lux <= 200000 or self.r10 <= 0 or self.gamma <= 0:
            raise ValueError("ldr: lux is 0..200000, r10 and gamma above 0")

    def r(self):
        if self.lux <= 0:
            return self.r_dark
        return min(self.r_dark, self.r10 * (10 / self.lux) ** self.gamma)


class Soil(Analog):
    """moisture %: 0 reads dry (its voltage in air), 100 wet (in water)."""

    KEYS = (("pin", PIN), ("moisture", 50.0), ("dry", 2.3), ("wet", 0.7))
    VALUES = ("moisture",)

    def check_values(self):
        if not 0 <= self.moisture <= 100 or not 0 <= self.wet < self.dry <= 3.6:
            raise ValueError("soil: moisture is 0..100 %, 0 <= wet < dry <= 3.6 V")

    def out(self):
        return self.dry - (self.dry - self.wet) * self.moisture / 100


TYPES = {"analog_in": Analog, "ntc": NTC, "ldr": LDR, "soil": Soil}
