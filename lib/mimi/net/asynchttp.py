# The asyncio HTTP client (Telegram's, on the event loop): net/http.py's protocol
# generators run on asyncio streams. Same API as http.Client, with `await`; reached
# as http.AsyncClient.
from mimi import bus, limits, net
from mimi.net.http import _W, _Base, _ask, _err, _exchange, _sunk


class AsyncClient(_Base):
    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        import asyncio

        self.lock = asyncio.Lock()  # held while a request is in flight

    async def request(self, method, path, headers=None, body=None, deadline_s=None, sink=None, ready=None):
        """sink: a function given the body piece by piece as it arrives (views of the
        receive buffer, valid during the call) instead of keeping it; .body is then
        empty and no size cap applies (the sink keeps what it can afford). ready: a
        coroutine function awaited first under the client's lock, with no other request
        in flight (Telegram's Api: its reconnect, the agent's TLS priority), before the
        deadline starts."""
        import asyncio

        self._start()
        head, data = self._build(method, path, headers, body)
        path = headers = body = None  # not held while the answer is awaited (a long poll: 30 s)
        secs = self.timeout_s if deadline_s is None else deadline_s
        await self.lock.acquire()  # (not `async with`: its handler held more of the frame a long poll waits in)
        alarm = None
        try:
            if ready is not None:
                await ready()
                ready = None  # (a bound method: not held for the 30 s of a long poll)
            # The deadline: a task that cancels this one (bus.within() written out, not
            # wait_for: Telegram's long poll waits here all the time, and within()'s frame
            # and a request coroutine of its own held 0.2 KB more)
            alarm = asyncio.create_task(bus.alarm(asyncio.current_task(), secs))
            attempt = 0  # (a second one on a fresh connection: _failed(); not `for` over
            while True:  # a tuple, whose iterator took 4 slots of the frame a long poll waits in)
                if self._sock is not None and self._stray(self._sock.s):
                    self.close()
                reused = self._sock is not None
                try:
                    if not reused:
                        await self._open()
                    await self._send(head, data)
                    resp, keep = await self._run(
                        _exchange(self._buf, method, limits.HTTP_RESPONSE_MAX) if sink is None
                        else _sunk(self._buf, method, sink))
                except Exception as e:  # noqa: B902 - any failure leaves the stream unusable
                    if self._failed(e, attempt, reused):
                        attempt = 1
                        continue
                if not keep:
                    self.close()
                return resp
        except asyncio.CancelledError:
            if alarm is None or not alarm.done():
                raise  # cancelled by its caller (Telegram's guard cuts a poll)
            self.close()
            raise _err("Timeout", "no answer from %s:%d within %s s" % (self.host, self.port, secs))
        finally:
            if alarm is not None:
                alarm.cancel()
            self.lock.release()

    def detach(self):
        """After a 101 answer (a WebSocket upgrade): the connection leaves the client
        -> (asyncio stream, bytes the server sent past the head, whether it is a TLS
        connection: its new owner then calls net.tls.closed() when it closes it)."""
        buf = self._buf
        stream, self._sock = self._sock, None
        wrapped, self._wrapped = self._wrapped, False
        return stream, bytes(buf.mv[buf.i:buf.j]), wrapped

    async def _open(self):
        import asyncio

        tls = self._roots()
        host, port = self._hop()
        try:
            from mimi.net import dns  # open_connection's own lookup would hold the loop

            try:
                ip = await dns.resolve(host)
            finally:
                import mimi  # (loaded: not a name of this module's table for one call)

                mimi.drop("net.dns")  # (a kept connection is opened again seldom)
            self._sock, _ = await asyncio.open_connection(ip, port)
        except OSError as e:
            raise _err("ConnectFailure", "cannot connect to %s:%d: %s" % (host, port, net.explain(e)))
        self.connects += 1
        net.nodelay(self._sock.s)
        if self.proxy:
            await self._run(self._tunnel())
        if tls:  # the handshake runs on the first write
            self._sock = asyncio.StreamReader(self._wrap(tls, self._sock.s))

    async def _send(self, head, data):
        """The request sent (http._ask) and the response's first bytes read into the
        buffer: a long poll waits here all the time, with no frame of the protocol's
        (the spent _ask generator's slot on this frame is overwritten by the read's)."""
        buf = self._buf
        gen = _ask(buf, head, data)
        try:
            await self._run(gen)
        finally:  # (stopped midway, whatever way: a body's open file closed with it,
            gen.close()  # net/httpbody.py, not left to the GC's finaliser)
        gen = None  # (spent: not held while the answer is awaited)
        n = None
        while n is None:
            n = await self._sock.readinto(buf.mv)
        buf.took(n, "response headers")

    async def _run(self, gen):
        s = self._sock
        res = None
        while True:
            try:
                op, arg = gen.send(res)
            except StopIteration as e:
                return e.value
            res = None
            if op == _W:
                s.write(arg)  # (a view is not copied: Stream.write copies what it keeps)
                await s.drain()
            else:
                while res is None:
                    res = await s.readinto(arg)
