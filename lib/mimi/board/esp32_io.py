# The device drivers' hardware seam on the ESP32-S3 (docs/hardware.md): the
# firmware's own machine.I2C, ADC, PWM, time_pulse_us, bitstream, esp32.mcu_temperature
# and the micropython-lib drivers it freezes (onewire, ds18x20, dht, neopixel).
# Loaded by board.__getattr__ when a driver first asks for one of them. Where the
# firmware's API has a trap, the seam closes it:
# - ADC(pin) without atten resets the attenuation to 11 dB: atten= is required;
# - PWM(pin) starts at 5 kHz, 50 % duty before a servo or a load can be told
#   otherwise: freq= and a duty are required, and given in the constructor.
import machine

I2C = machine.I2C
time_pulse_us = machine.time_pulse_us
bitstream = machine.bitstream


class ADC:
    ATTN_0DB = machine.ADC.ATTN_0DB
    ATTN_2_5DB = machine.ADC.ATTN_2_5DB
    ATTN_6DB = machine.ADC.ATTN_6DB
    ATTN_11DB = machine.ADC.ATTN_11DB

    def __new__(cls, pin, *, atten=None):
        if atten is None:
            raise TypeError("ADC needs atten= (machine.ADC resets it to 11 dB without it)")
        return machine.ADC(machine.Pin(pin), atten=atten)


def PWM(pin, *, freq, duty_u16=None, duty_ns=None):
    if duty_ns is not None:
        return machine.PWM(machine.Pin(pin), freq=freq, duty_ns=duty_ns)
    if duty_u16 is None:
        raise TypeError("PWM needs duty_u16= or duty_ns= (machine.PWM starts at 50 %)")
    return machine.PWM(machine.Pin(pin), freq=freq, duty_u16=duty_u16)


def mcu_temperature():
    import esp32

    return esp32.mcu_temperature()


def onewire(pin):
    import onewire

    return onewire.OneWire(machine.Pin(pin))


def ds18x20(pin):
    import ds18x20

    return ds18x20.DS18X20(onewire(pin))


def dht(pin, model):
    import dht

    if model not in (11, 22):
        raise ValueError("DHT model is 11 or 22")
    return (dht.DHT11 if model == 11 else dht.DHT22)(machine.Pin(pin))


def neopixel(pin, n, bpp=3, timing=1):
    import neopixel

    return neopixel.NeoPixel(machine.Pin(pin), n, bpp=bpp, timing=timing)
