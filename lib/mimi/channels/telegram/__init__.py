# The Telegram channel: the resident long poll (poller.py); sending (send.py, with format.py,
# status.py and echo.py), an answer with updates (updates.py) and connecting (connect.py) load
# when used.
