# bench/mp/turn.py's "prepare" mode: the workload's files and settings on the image.
import json
from mimi import board, bus, fs
from mimi.config import settings as config

CHAT = "bench"
SEED = "/bench_session.jsonl"  # the stored messages, put back before every turn


def _history(n, _seed, text):
    from mimi.memory import sessions

    fs.makedirs(sessions.DIR)
    with open(SEED, "wb") as f:
        for k in range(n):
            role = "user" if k % 2 == 0 else "assistant"
            f.write(json.dumps({"role": role, "content": text(k), "ts": 0}).encode() + b"\n")
    _seed()


def prepare(A, out, _seed):
    from mimi.config import defaults
    from mimi.memory import sessions, store
    from mimi.agent import context

    defaults.install()
    config.cfg.load()
    config.cfg.update({"provider": A["kind"], "api_key": A["api_key"], "api_base": A["base"],
                       "model": "bench-model", "ws_token": "bench-turn-token",
                       "max_calls_hour": 0, "max_calls_day": 0})  # 1,000 turns: no spend cap
    w = A.get("workload")
    if w == "full":
        line = "The user likes short answers and lives in Lisbon; keep replies brief. "
        fs.write_atomic(context.SOUL_PATH, (line * 200).encode())  # ~14 KB each:
        fs.write_atomic(context.USER_PATH, (line * 200).encode())  # the prompt hits 16 KB
        fs.write_atomic(store.MEMORY_PATH, (line * 70).encode())
        _history(A.get("history", 20), _seed, lambda k: ("message %d: " % k) + "word " * 100)
    elif w == "peer":
        fact = "- The user prefers metric units and short, direct answers.\n"
        fs.write_atomic(store.MEMORY_PATH, ("# Memory\n\n" + fact * 68).encode())  # 4 KB
        now = board.clock.unix()
        for d in range(3):
            date = store.today(now - d * 86400)
            fs.write_atomic(store.note_path(date), ("# %s\n\n" % date + "- Watered the plants "
                                                    "and checked the sensors.\n" * 12).encode())
        _history(A.get("history", 20), _seed, lambda k: ("message %d " % k + "talk " * 60)[:300])
    p = context.build_system_prompt("websocket", CHAT)
    out({"prompt_bytes": len(p.encode()),
         "history": len(sessions.load(bus.session_key("websocket", CHAT)))})


