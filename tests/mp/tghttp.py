# Test helpers for the loopback fakes: one JSON request with the firmware's
# AsyncClient, and waiting for a condition.
import json
import asyncio
from mimi.net.http import AsyncClient


async def request_json(base, method, path, obj=None):
    c = AsyncClient(base, timeout_s=30)
    try:
        body = json.dumps(obj).encode() if obj is not None else None
        r = await c.request(method, path, {"Content-Type": "application/json"}, body, 30)
        return json.loads(r.body)
    finally:
        c.close()


async def until(pred, what, timeout_s=20):
    """Wait for pred() (plain or async) to be true -> its value; a hang guard, not a
    timing check."""
    for _ in range(timeout_s * 20):
        v = pred()
        if type(v).__name__ == "generator":
            v = await v
        if v:
            return v
        await asyncio.sleep_ms(50)
    raise AssertionError("timed out waiting for " + what)
