# Telegram's refusal of a Bot API call (poller.py's Api.call raises it, made by
# refused()), in a module of its own: loaded by the first refusal or the first
# `poller.ApiError` named (poller's __getattr__), not held from boot by a poller that
# was never refused (128 B frozen).
# Never unloaded: an `except` names the same class as the raise.


class ApiError(Exception):
    def __init__(self, code, description, retry_after=None):
        super().__init__("%s %s" % (code, description))
        self.code = code
        self.description = description if isinstance(description, str) else ""
        ok = isinstance(retry_after, (int, float)) and not isinstance(retry_after, bool)
        self.retry_after = max(0, retry_after) if ok else None  # junk here stopped the poller

    @property
    def entities(self):
        return self.code == 400 and "can't parse entities" in self.description


def refused(status, obj, chat, quiet):
    """The ApiError of Telegram's answer `obj` (decoded JSON, or None) with HTTP `status`;
    a 429 for `chat` quiets it for its retry_after (`quiet`: poller.py's table of them)."""
    if not isinstance(obj, dict):
        return ApiError(status, "non-JSON answer (HTTP %d)" % status)
    p = obj.get("parameters")
    e = ApiError(obj.get("error_code") or status, obj.get("description"),
                 p.get("retry_after") if isinstance(p, dict) else None)
    if e.code == 429 and chat is not None:  # (tg_allow's chats only: few)
        import time
        from mimi import limits

        quiet[str(chat)] = time.ticks_add(time.ticks_ms(), min(e.retry_after or 1, limits.TG_RETRY_AFTER_MAX_S) * 1000)
    return e

