# Test helper: one JSON request to a loopback fake with the firmware's AsyncClient.
import json
from mimi.net.http import AsyncClient


async def request_json(base, method, path, obj=None):
    c = AsyncClient(base, timeout_s=30)
    try:
        body = json.dumps(obj).encode() if obj is not None else None
        r = await c.request(method, path, {"Content-Type": "application/json"}, body, 30)
        return json.loads(r.body)
    finally:
        c.close()
