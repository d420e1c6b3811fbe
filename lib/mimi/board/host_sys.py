# The host's board.__getattr__ (board/__init__.py sends it every name board/host.py
# lacks): each name from the module that has it, loaded when first asked for. The
# access point, OTA slots and image mount (board/host_fakes.py) by name; then GPIO
# (board.Pin, SIM_PINS, sim_drive: host_pins.py), the device drivers' seam (board.I2C,
# ADC, ...: host_io.py) and the firmware's driver modules (board.onewire, dht, ...:
# host_drivers.py), in that order. Only this lookup stays loaded for it: a boot that
# never asks for the access point or OTA does not carry their fakes (2.5 KB of the
# 32-bit heap the board does not have).
import sys

_FAKES = ("SimAP", "ap_wlan", "Partition", "image_blocks", "mount_image")


def __getattr__(name):
    if name[:1] == "_":
        raise AttributeError(name)
    for mod in ("mimi.board.host_fakes",) if name in _FAKES else \
            ("mimi.board.host_pins", "mimi.board.host_io", "mimi.board.host_drivers"):
        __import__(mod)
        mod = sys.modules[mod]
        if hasattr(mod, name):
            return getattr(mod, name)
    raise AttributeError(name)
