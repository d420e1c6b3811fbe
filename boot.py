# Runs first on every boot, before main.py. Kept tiny on purpose: an error here
# would stand between the user and the REPL.
import sys

if sys.platform == "esp32":
    import machine

    machine.freq(240000000)
