# The gateway's start (gateway.run() loads this once and drops it): its listening
# socket, on the ws_port asked for or a free one, and the lines the log says of it.
import asyncio
import mimi
from mimi import limits, log, board, net
from mimi.config import settings as config
from mimi.channels.websocket import gateway as gw


async def serve():
    """The listening server (its port in gateway.port), or None when no port could be had."""
    host = board.BIND_ADDR
    from mimi.net import listen

    try:
        server, gw.port = await listen.on_port(config.cfg.get("ws_port"),
                                               lambda p: asyncio.start_server(gw._connection, host, p),
                                               limits.WS_PORT_ANY, limits.WS_PORT_TRIES)
    except OSError as e:
        log.error("ws", "gateway could not listen on %s:%s: %s (port taken? pick another with "
                  "config_set('ws_port', N), or tools/sim --set ws_port=N)", host, config.cfg.get("ws_port"),
                  net.explain(e))
        return None
    listen = None
    mimi.drop("net.listen")  # used once
    # Tests find the port from this line: "gateway listening on HOST:PORT".
    log.info("ws", "gateway listening on %s:%d", host, gw.port)
    if not config.cfg.get("ws_token"):
        log.warning("ws", "gateway auth is OFF (ws_token is empty): anyone who can reach "
                    "port %d can use the agent", gw.port)
    return server
