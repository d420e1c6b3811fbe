# The console: the REPL on the serial console (serial.py, raw.py) and the REPL commands' bodies (commands.py, heapinfo.py).
