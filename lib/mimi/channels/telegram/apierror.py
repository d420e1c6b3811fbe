# Telegram's refusal of a Bot API call (poller.py's Api.call raises it), in a module of
# its own: loaded by the first refusal or the first `poller.ApiError` named (poller's
# __getattr__), not held from boot by a poller that was never refused (128 B frozen).
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
