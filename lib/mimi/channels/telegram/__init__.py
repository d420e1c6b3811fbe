# The Telegram channel: the resident long poll (poller.py); sending (send.py, with format.py and
# status.py), an answer with updates (updates.py) and connecting (connect.py) load when used.
