"""The whole firmware under a capped heap, per interpreter (64-bit .venv, 32-bit when
present): tools/sim with the gateway, Telegram on the fake Bot API, a cron job,
heartbeat, the agent thread and the console, answering the workload of issue 12
(tests/wholefw.py: the full 16 KB system prompt, 20 stored messages, a 3-tool turn =
4 LLM calls, the fake Anthropic API over HTTPS on loopback, web_search on the fake
Tavily over plain HTTP), with four devices attached (issue 23; a device turn reads the
simulated SHT3x).
1. the smallest heap (in STEP_KB steps, from HI_KB down to the first failure) where it
   answers one WebSocket, one Telegram and one device turn;
2. a long run at LONG_KB: WebSocket, Telegram and device turns in turn; heap in use and
   largest free block (heap_info() on the console) after boot (settled: 60 s up),
   after 10 turns and after the last; TLS contexts made, handshakes, connections open at peak.

  .venv/bin/python bench/longrun.py [-n TURNS]   (default 1000)
"""
import tempfile
import time

from common import Sim, Table, certs, cli, interpreters, smoke
from fakes import llm as fake_llm
from fakes import search as fake_search
from fakes import telegram as fake_telegram
import wholefw

HI_KB = {"64-bit": 480, "32-bit": 320, "64-bit frozen": 320, "32-bit frozen": 224}
STEP_KB = 16
# the long run's heap (32-bit frozen: issue 12's target for the whole firmware). 64-bit:
# about limits.HEAP_SHORT free between turns (a turn in three ends below it and drops
# its code); 32-bit .mpy: short, each turn alone. The LLM connection is kept either way
# (a short heap drops the provider, not its connection: worker._forget()).
LONG_KB = {"64-bit": 512, "32-bit": 304, "64-bit frozen": 320, "32-bit frozen": 192}
TURNS = 1000


class Fakes:
    def __init__(self, tmp):
        c = certs(tmp)
        self.llm = fake_llm.start("anthropic", c)
        self.tg = fake_telegram.start()
        self.search = fake_search.start()
        self.ca = c["ca"]

    def close(self):
        for f in (self.llm, self.tg, self.search):
            f.close()


def _start(fk, tmp, mp, kb):
    wholefw.prepare(tmp, fk.ca)
    return Sim.start(tmp, *wholefw.settings(fk.llm, fk.tg), console=True, heap="%dk" % kb,
                     micropython=mp)


def turn(sim, fk, i, timeout=60):
    """Turn i (WebSocket, Telegram, a device read: in turn) -> True when it answered as
    scripted."""
    fk.llm.reset()  # the fake keeps every request body: forget the last turn's
    tag = "turn %d" % i
    got = (wholefw.ws_turn(sim, fk.llm, tag, timeout) if i % 3 == 0 else
           wholefw.tg_turn(fk.tg, fk.llm, tag, timeout) if i % 3 == 1 else
           wholefw.device_turn(sim, fk.llm, tag, timeout))
    return got == wholefw.answer(tag)


def _clean(out):
    return "MemoryError" not in out and "Traceback" not in out


def passes(mp, kb):
    """Does the whole firmware answer one WebSocket, one Telegram and one device turn at kb KB?"""
    with tempfile.TemporaryDirectory() as tmp:
        fk = Fakes(tmp)
        try:
            with _start(fk, tmp, mp, kb) as sim:
                try:
                    wholefw.ready(sim, fk.search)
                    wholefw.attach_parts(sim)
                    ok = turn(sim, fk, 0) and turn(sim, fk, 1) and turn(sim, fk, 2)
                except AssertionError:  # no answer in time, or no boot
                    ok = False
                return ok and _clean(sim.output())
        finally:
            fk.close()


def smallest(mp, hi):
    """(smallest heap KB that passed, scanning down from hi; the first that failed)."""
    kb, good = hi, None
    while kb > 0 and passes(mp, kb):
        good, kb = kb, kb - STEP_KB
        if smoke():  # one try, at the top
            return good, kb
    return good, kb


def long_run(mp, kb, n):
    with tempfile.TemporaryDirectory() as tmp:
        fk = Fakes(tmp)
        try:
            with _start(fk, tmp, mp, kb) as sim:
                wholefw.ready(sim, fk.search)
                wholefw.attach_parts(sim)
                # settled: the 60 s healthy mark's one-shot work done (on the host it
                # loads board/host_sys.py for good, 3 KB the board does not have)
                if not smoke():  # (60 s after boot)
                    sim.wait_for(r"boot marked healthy", 120)
                at = {"boot": wholefw.heap(sim)}
                failed = 0
                t0 = time.monotonic()
                for i in range(n):
                    if not turn(sim, fk, i):
                        failed += 1
                    for mark in {10, n}:
                        if mark - 3 < i + 1 <= mark:
                            at.setdefault(mark, []).append(wholefw.heap(sim))
                took = time.monotonic() - t0
                out = sim.output()
        finally:
            fk.close()
    # After each of the 3 turns up to a mark (one of each kind), the one with the least in
    # use: what a turn leaves for a moment (a module of the last turn's kind, a file being
    # saved) is not growth, and growth shows in all three.
    for mark in {10, n}:
        least = min(at[mark], key=lambda h: h["alloc"])
        at[mark] = dict(at[mark][-1], alloc=least["alloc"], largest=least["largest"])  # (TLS: the last)
    return at, failed, took, _clean(out)


def _kb(n):
    return "%.1f KB" % (n / 1024)


def tables(n=None):
    n = max(n or TURNS, 10)
    m = Table("Whole firmware: smallest heap answering the full-prompt 3-tool turn on "
              "WebSocket and Telegram and a device turn (LLM over HTTPS)",
              ["interpreter", "smallest heap that passed", "next step down (failed)",
               "without the simulated hardware's share"])
    r = Table("Whole firmware over %d turns (WebSocket and Telegram alternating, 3 tools "
              "each, LLM over HTTPS)" % n,
              ["interpreter", "heap", "in use after boot", "after 10 turns", "after %d" % n,
               "largest free block after boot", "after 10", "after %d" % n,
               "TLS contexts made", "handshakes",
               "TLS connections open at peak", "turns not as scripted", "s per turn"])
    for label, mp in interpreters():
        good, bad = smallest(mp, HI_KB[label])
        host = 0 if "frozen" in label else wholefw.HOST_HW_KB
        m.add(label, "%d KB" % good if good else "none from %d KB" % HI_KB[label],
              "%d KB" % bad if good else "-", "%d KB" % (good - host) if good else "-")
        at, failed, took, clean = long_run(mp, LONG_KB[label], n)
        if smoke() and not (good and clean and not failed):
            raise RuntimeError("%s: the whole firmware did not answer as scripted at %d KB"
                               % (label, HI_KB[label] if not good else LONG_KB[label]))
        last = at[n]
        r.add(label, "%d KB" % LONG_KB[label], _kb(at["boot"]["alloc"]), _kb(at[10]["alloc"]),
              _kb(last["alloc"]), _kb(at["boot"]["largest"]), _kb(at[10]["largest"]),
              _kb(last["largest"]), last["contexts"], last["handshakes"],
              last["open_peak"], "%d of %d%s" % (failed, n, "" if clean else " (MemoryError in log)"),
              took / n)
    m.notes = ("tools/sim --heap in %d KB steps from %s down to the first failure; a pass = "
               "the three turns answer the scripted text and the log has no MemoryError or "
               "Traceback. The workload: tests/wholefw.py (SOUL.md and USER.md of ~14 KB: "
               "the prompt is cut at its 16 KB cap; 20 stored messages of ~520 B in each "
               "chat; get_current_time, read_file, web_search; four devices, an SHT3x read). "
               "The simulated parts and the board seam's host side take %d KB of a .mpy "
               "build's heap that a board does not spend (tests/wholefw.py HOST_HW_KB)."
               % (STEP_KB, ", ".join("%s %d KB" % kv for kv in HI_KB.items()), wholefw.HOST_HW_KB))
    r.notes = ("heap_info() typed on the console (gc.collect() first), after boot = once the "
               "log says 'boot marked healthy' (60 s up), after N turns = the least of the "
               "figures after turns N-2, N-1 and N (a WebSocket, a Telegram and a device turn: "
               "what one kind of turn leaves for a moment is not growth); the console and its commands "
               "(~8.5 KB on 32-bit) are loaded while heap_info() runs (on a short heap they go "
               "again after the line); largest block probed up to 64 KB "
               "(limits.HEAP_PROBE_MAX). TLS: mimi.net.tls.stats() at the end (the shared "
               "context; Telegram's fake Bot API is plain HTTP, so every TLS connection is "
               "the LLM's, kept alive for a turn's 4 calls and between turns; with a short "
               "heap the provider is dropped after each turn and its connection kept).")
    return [m, r]


if __name__ == "__main__":
    cli(tables)
