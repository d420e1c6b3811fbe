# The WebSocket channel: the resident gateway (gateway.py); a connection's code (connection.py)
# and the chat page (chatpage.py) load when used.
