# A server's listening port, for the gateway and the portal: a fixed one, or a free
# random one in a span. Its own module: each server needs it once, at its start.
import errno
from mimi.net import random_id


async def on_port(want, make, span, tries):
    """(await make(port), port): on port `want`, or when want is 0 on a random port
    in span (lo, hi) that is free (at most `tries` ports tried)."""
    lo, hi = span
    for _ in range(1 if want else tries):
        port = want or lo + int(random_id(2), 16) % (hi - lo)
        try:
            return await make(port), port
        except OSError as e:
            if want or e.errno != errno.EADDRINUSE:
                raise
    raise OSError(errno.EADDRINUSE, "no free port found")
