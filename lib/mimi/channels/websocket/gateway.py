# The WebSocket gateway (SPEC §7): an RFC 6455 server on the asyncio loop, plus the
# chat page on a plain GET /. This module is what stays loaded: the listener, the
# state every connection shares and the dispatcher's sender (its work with a client
# connected is connection.py's: text(), chart(), send()). A connection's code
# (connection.py with net/wsproto.py; the HTTP part, upgrade.py with net/httpserver.py,
# and what a frame that comes in runs, incoming.py with net/wsread.py, for less) is
# loaded when one arrives and dropped when the last one ends,
# so a board nobody chats with over WebSocket does not hold it.
import sys
import asyncio
import mimi
from mimi import log, bus, channels

CHANNEL = "websocket"

port = None  # the port actually listening (ws_port 0 picks one; start.py sets it)
clients = []  # connection.Client of every upgraded connection
_conns = []  # [address, task, upgraded, Reader] of every open connection, oldest first
_fails = {}  # address ("*": all the others) -> (wrong tokens in a row, ticks_ms until which it is refused)
_shed_lately = {}  # address -> connections opened, shed or timed out lately (net/httpserver.shed())


async def send(msg):
    """Dispatcher target: a status or reply to every client on msg.chat_id
    (connection.py's send(), loaded while there is a client); with none, a reply is
    only logged (it stays in its session)."""
    if clients:
        return await sys.modules["mimi.channels.websocket.connection"].send(msg)
    if msg.kind == bus.REPLY and not (isinstance(msg.meta, dict) and "chart" in msg.meta):
        if isinstance(msg.meta, dict) and "notice" in msg.meta:  # a rule's (services/rules/act.py)
            log.warning("ws", "no client on chat %s; a rule's notice is not kept: %s", msg.chat_id, msg.content)
        else:
            log.info("ws", "no client on chat %s; the reply stays in its session", msg.chat_id)


NO_ROOM = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 38\r\nConnection: close\r\n\r\nthe board is out of memory; try again\n"


async def refuse(sw):
    """A connection not upgraded yet that found no room in the heap (its code, its
    buffers): the spare given back (mimi.spare()) and a 503 said, not left hanging."""
    mimi.spare(False)
    log.warning("ws", "no room in the heap for a connection; refused (503)")
    try:
        sw.write(NO_ROOM)
        await sw.drain()
    except Exception:  # (the peer gone, or no room even for that)
        pass


async def _connection(sr, sw):
    try:
        wsconn = channels.load("websocket.connection")
    except MemoryError:
        try:
            await refuse(sw)
        finally:
            sw.close()
        return
    try:
        await wsconn.serve(sr, sw)
    finally:
        if not _conns:  # the last one: its code goes (the codec and the HTTP parts too,
            wsconn._unload(True)  # unless the WebSocket client or the portal use them)
            mimi.drop("channels.websocket.connection")
            mimi.drop("channels.websocket")  # (the package came back with it)
            if "mimi.services.portal" not in sys.modules:
                mimi.drop("net.httpserver")
                mimi.drop("net.listen")  # (httpserver's import)
                mimi.drop("net.reader")


async def run():
    """The gateway task (started by dispatch.start(), which registers send()). It waits
    in a frame that holds the server only: the listening's own (its calls' arguments
    and log lines) is start.py's, loaded for it and gone once it returned."""
    server = await channels.load("websocket.start").serve()
    mimi.drop("channels.websocket.start")
    mimi.drop("channels.websocket")  # (the package came back with it)
    if server is None:
        return
    try:
        while True:
            await asyncio.sleep(3600)
    finally:
        server.close()
        for c in clients:
            c.drop()
