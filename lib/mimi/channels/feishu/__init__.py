# The Feishu channel: the resident long connection (longconn.py); its frames (frame.py), reply
# formatting (format.py) and the REPL's feishu_send() body (repl.py) load when used.
