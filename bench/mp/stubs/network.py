# What board/esp32.py takes from the ESP32's network module at import (bench/mp/hostshare.py).
class WLAN:
    IF_STA = 0
    IF_AP = 1
