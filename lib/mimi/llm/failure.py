# What a failed LLM request needs, and only then: the API's own error message, the
# server's Retry-After, and whether a transport failure is worth another try. A module
# of its own so that a turn whose calls succeed never loads it.
from mimi import fs, limits


def retry_after(headers):
    """Seconds the server asks us to wait, clamped to [0, LLM_BACKOFF_MAX_S] (a negative
    value made time.sleep fail the turn); None when absent or unreadable (an HTTP date, NaN)."""
    for key, scale in (("retry-after-ms", 1000), ("retry-after", 1)):
        v = headers.get(key)
        if v:
            try:
                w = float(v) / scale
            except ValueError:  # an HTTP date: fall back to our own backoff
                continue
            if w == w:  # not NaN
                return min(max(w, 0), limits.LLM_BACKOFF_MAX_S)
    return None


def error_text(resp):
    """The API's own error message from an error response (both APIs' shapes, and the
    looser ones of other OpenAI-compatible servers), else the start of the body."""
    try:
        data = resp.json()
    except Exception:  # any parse failure: quote the body instead
        data = None
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:limits.LLM_ERROR_BODY_MAX]
        for v in (err, data.get("message"), data.get("detail")):
            if isinstance(v, str) and v:
                return v[:limits.LLM_ERROR_BODY_MAX]  # the whole of it would be the user's reply
    text = fs.decode(fs.utf8_cut(resp.body or b"", limits.LLM_ERROR_BODY_MAX))
    return text.strip() or "(empty response)"


def retryable(e):
    # A bad certificate, an oversized reply, a proxy's refusal or a mid-stream error
    # that says the request is wrong (final) will not get better by asking again.
    from mimi.net import http

    return not (isinstance(e, (http.TLSFailure, http.TooLarge)) or getattr(e, "final", False))
