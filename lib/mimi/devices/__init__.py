# The parts wired to the board: which GPIO pins may be used (pins.py) and the pins the GPIO
# tools drive (gpio.py).
