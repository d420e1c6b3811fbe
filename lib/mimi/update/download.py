# Downloads of updates (bundles, firmware images) on the asyncio loop: the firmware
# keeps running meanwhile (gateway, Telegram, Feishu, cron), and a download that
# cannot succeed ends early with its reason: the server stalled (nothing for
# OTA_IDLE_S), it crawls (under OTA_RATE_MIN bytes/s over OTA_RATE_WINDOW_S), or at
# its pace the rest would not arrive within OTA_DEADLINE_S. The body goes to a sink
# piece by piece (the HTTP client's sink: nothing is kept whole); redirects are
# followed, TLS verified against the board's roots, the proxy setting used.
# start(coro) runs an update: a loop task while the firmware runs (the REPL command
# returns at once), else to its end.
import sys
import time
from mimi import limits
from mimi.update.boot import OTAError

_REDIRECTS = (301, 302, 303, 307, 308)


class Moved(Exception):
    """A redirect's answer (raised by a sink's begin(): its body is not wanted)."""

    def __init__(self, location):
        super().__init__(location)
        self.location = location


class Pace:
    """How a download goes: bytes in, the whole when known (total), and why() it must
    end early, asked every OTA_PACE_MS."""

    def __init__(self, url):
        self.url = url
        self.got = 0
        self.total = None
        self.t0 = self.last = time.ticks_ms()
        self.mark = (self.t0, 0)  # the window's start: (ticks_ms, got)
        self.stopped = None  # why it was ended early

    def add(self, n):
        if n:
            self.got += n
            self.last = time.ticks_ms()

    def text(self):
        return "%d of %s bytes" % (self.got, "?" if self.total is None else self.total)

    def why(self):
        now = time.ticks_ms()
        idle = time.ticks_diff(now, self.last) // 1000
        if idle >= limits.OTA_IDLE_S:
            return "the server stalled: nothing received for %d s (%s in)" % (idle, self.text())
        took = time.ticks_diff(now, self.t0) // 1000
        if took >= limits.OTA_DEADLINE_S:
            return "not done within the %d s allowed (%s in)" % (limits.OTA_DEADLINE_S, self.text())
        since, had = self.mark
        span = time.ticks_diff(now, since)
        if span < limits.OTA_RATE_WINDOW_S * 1000:
            return None
        self.mark = (now, self.got)
        rate = (self.got - had) * 1000 // span
        if rate < limits.OTA_RATE_MIN:
            return "too slow: %d bytes in the last %d s (%s in; at least %d bytes/s are needed)" % (
                self.got - had, span // 1000, self.text(), limits.OTA_RATE_MIN)
        if self.total is not None and took + (self.total - self.got) // rate > limits.OTA_DEADLINE_S:
            return "too slow: at %d bytes/s the remaining %d bytes would arrive past the %d s allowed" % (
                rate, self.total - self.got, limits.OTA_DEADLINE_S)
        return None


async def get(url, sink, pace, headers=None):
    """GET url into sink (its begin(status, headers) sees each answer's head first and
    raises Moved for a redirect; it is called with each piece of the body), while pace
    keeps up. OTAError with the reason when it fails."""
    import asyncio
    from mimi.net import http
    from mimi.config.settings import cfg

    proxy = http.proxy_from_config(cfg)
    watch = asyncio.create_task(_watch(pace, asyncio.current_task()))
    try:
        for _ in range(limits.HTTP_REDIRECTS + 1):
            origin, path = _split(url)
            try:
                client = http.AsyncClient(origin, proxy=proxy, timeout_s=limits.OTA_DEADLINE_S)
            except ValueError as e:  # not an http(s) URL
                raise OTAError(str(e))
            try:
                await client.request("GET", path, headers or {"User-Agent": "MimiClaw-OTA"}, sink=sink)
                return
            except Moved as e:
                url = _resolve(e.location, origin, path)
            except asyncio.CancelledError:
                if pace.stopped:  # (else the update itself is being stopped)
                    raise OTAError(pace.stopped)
                raise
            except (http.ConnectFailure, http.TLSFailure) as e:
                raise OTAError("cannot connect (%s)" % e)
            except (http.HTTPError, OSError) as e:
                raise OTAError("download failed: %s" % e)
            finally:
                client.close()
        raise OTAError("download failed: more than %d redirects" % limits.HTTP_REDIRECTS)
    finally:
        watch.cancel()


async def _watch(pace, task):
    """Beside a download: cancel it once its pace says why it must end."""
    import asyncio

    while True:
        await asyncio.sleep_ms(limits.OTA_PACE_MS)
        why = pace.why()
        if why:
            pace.stopped = why
            task.cancel()
            return


def answer(status, headers, pace):
    """A sink's begin(): a redirect is followed (Moved), any other answer but 200 ends the
    download; the body's length, when said, is the download's total."""
    if status in _REDIRECTS and headers.get("location"):
        raise Moved(headers["location"])
    if status != 200:
        raise OTAError("download failed: HTTP %d" % status)
    n = headers.get("content-length")
    if n and n.isdigit():
        pace.total = int(n)


def _split(url):
    """'https://h:1/a?b' -> ('https://h:1', '/a?b')"""
    from mimi.net import split_url

    try:
        path = split_url(url)[3]
    except ValueError as e:
        raise OTAError(str(e))
    return url[:len(url) - len(path)], path or "/"


def _resolve(loc, origin, path):
    """The absolute URL of a redirect's Location, answered to origin + path."""
    if "://" in loc:
        return loc
    if loc.startswith("//"):
        return origin[:origin.find("//")] + loc
    if not loc.startswith("/"):
        path = path.partition("?")[0]
        loc = path[:path.rfind("/") + 1] + loc
    return origin + loc


# --- running an update -------------------------------------------------------------
def looping():
    """Does the firmware's asyncio loop run (the REPL command comes from its console)?"""
    app = sys.modules.get("mimi.app")
    return bool(app and getattr(app, "looping", False))


def start(coro):
    """Run an update's coroutine: a loop task while the firmware runs (so nothing waits
    for it), else to its end here. One at a time (mimi.downloading says which)."""
    import mimi
    import asyncio

    busy = getattr(mimi, "downloading", None)
    if busy is not None:
        coro.close()
        print("Error: an update is downloading already (%s from %s); ota_status() shows how "
              "far it got." % (busy.text(), busy.url))
        return
    if not looping():
        asyncio.run(coro)
        return
    asyncio.create_task(_then_drop(coro, set(sys.modules)))
    print("Downloading; the firmware keeps running. What happens is printed here and logged "
          "(log_tail()); ota_status() shows how far it got.")


async def _then_drop(coro, before):
    """A background update; what it loaded is let go when it ends without a reset: the
    update package (nobody keeps it loaded; the REPL command's mimi.run() dropped it
    when the command returned, and this task loaded it again) and the loop's HTTP
    client if it was not loaded before (stateless; not the TLS or DNS state others share)."""
    import mimi

    try:
        await coro
    finally:
        for m in [m for m in sys.modules if m.startswith("mimi.update")
                  or (m == "mimi.net.asynchttp" and m not in before)]:
            mimi.unload(m)


class busy:
    """`with busy(pace):` the update downloading now (mimi.downloading), for ota_status(),
    a second ota_update() and make deploy, which would use the same staging folder."""

    def __init__(self, pace):
        self.pace = pace

    def __enter__(self):
        import mimi

        mimi.downloading = self.pace
        return self.pace

    def __exit__(self, *exc):
        import mimi

        mimi.downloading = None
