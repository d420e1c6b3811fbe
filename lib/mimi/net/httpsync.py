# The blocking HTTP client (the agent thread's: LLM calls, web search), reached as
# http.Client: net/http.py's protocol generators run on non-blocking sockets with
# poll. Same API as http.AsyncClient without `await`.
import errno
import select
import socket
import time
from mimi import limits, net
from mimi.net.http import _W, _Base, _ask, _err, _exchange, _sunk


class Client(_Base):
    def request(self, method, path, headers=None, body=None, deadline_s=None, sink=None):
        """sink: as AsyncClient.request's (a streamed LLM answer)."""
        deadline = self._begin(deadline_s)
        if sink is not None:
            return self._send(method, path, headers, body, deadline, _sunk, sink)[0]
        return self._send(method, path, headers, body, deadline, _exchange,
                          limits.HTTP_RESPONSE_MAX)[0]

    def _begin(self, deadline_s):
        self._start()
        self._secs = self.timeout_s if deadline_s is None else deadline_s
        return time.ticks_add(time.ticks_ms(), int(self._secs * 1000))

    def _send(self, method, path, headers, body, deadline, proto, cap):
        head, data = self._build(method, path, headers, body)
        for attempt in (0, 1):
            if self._sock is not None and self._stray(self._sock):
                self.close()
            reused = self._sock is not None
            try:
                if not reused:
                    self._open(deadline)
                buf = self._buf
                gen = _ask(buf, head, data)
                try:
                    self._run(gen, deadline)
                finally:  # (stopped midway, whatever way: a body's open file closed with it,
                    gen.close()  # net/httpbody.py, not left to the GC's finaliser)
                self._run(buf.fill("response headers"), deadline)
                res = self._run(proto(buf, method, cap), deadline)
            except Exception as e:  # noqa: B902 - any failure leaves the socket unusable
                if self._failed(e, attempt, reused):
                    continue
            if not res[1]:
                self.close()
            return res

    def _open(self, deadline):
        tls = self._roots()
        host, port = self._hop()
        try:
            ai = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)[0]
        except OSError as e:
            raise _err("ConnectFailure", "cannot resolve %s: %s" % (host, e))
        try:
            s = socket.socket(ai[0], socket.SOCK_STREAM)
        except OSError as e:
            raise _err("ConnectFailure", "cannot open a socket for %s:%d: %s" % (host, port, net.explain(e)))
        self._sock = s
        net.nodelay(s)
        s.setblocking(False)
        try:
            s.connect(ai[-1])
        except OSError as e:
            if e.args[0] != errno.EINPROGRESS:
                raise _err("ConnectFailure", "cannot connect to %s:%d: %s" % (host, port, net.explain(e)))
        if self._wait(select.POLLOUT, deadline) & (select.POLLERR | select.POLLHUP):
            raise _err("ConnectFailure", "cannot connect to %s:%d (refused or unreachable)" % (host, port))
        self.connects += 1
        if self.proxy:
            self._run(self._tunnel(), deadline)
        if tls:
            self._sock = self._wrap(tls, s)

    def _wait(self, mask, deadline):
        left = time.ticks_diff(deadline, time.ticks_ms())
        if left > 0:
            p = select.poll()
            p.register(self._sock, mask)
            ev = p.poll(left)
            if ev:
                return ev[0][1]
        raise _err("Timeout", "no answer from %s:%d within %s s" % (self.host, self.port, self._secs))

    def _run(self, gen, deadline):
        s = self._sock
        res = None
        while True:
            try:
                op, arg = gen.send(res)
            except StopIteration as e:
                return e.value
            res = None
            if op == _W:
                mv = memoryview(arg)
                off = 0
                while off < len(mv):
                    n = s.write(mv[off:])
                    if n is None:
                        self._wait(select.POLLOUT, deadline)
                    else:
                        off += n
            else:
                while res is None:
                    res = s.readinto(arg)
                    if res is None:
                        self._wait(select.POLLIN, deadline)
