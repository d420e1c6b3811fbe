# A walker over JSON bytes: positions of values without decoding the whole text, for
# big bodies (web search results, decoded one at a time) and session lines (where a
# message's text sits, to send it as stored). ValueError (or IndexError at the end of
# the bytes) when the text is not such JSON.
WS = (32, 9, 10, 13)


def ws(b, i):
    while b[i] in WS:
        i += 1
    return i


def skip_string(b, i):
    """b[i] is '"': index after the closing quote."""
    while True:
        j = b.find(b'"', i + 1)
        if j < 0:
            raise ValueError("unterminated string")
        k = j - 1
        while b[k] == 92:  # backslashes before the quote
            k -= 1
        if (j - 1 - k) % 2 == 0:
            return j + 1
        i = j


def skip_value(b, i):
    c = b[i]
    if c == 34:
        return skip_string(b, i)
    if c == 123 or c == 91:
        depth = 0
        n = len(b)
        while i < n:
            c = b[i]
            if c == 34:
                i = skip_string(b, i)
                continue
            if c == 123 or c == 91:
                depth += 1
            elif c == 125 or c == 93:
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        raise ValueError("unterminated container")
    while b[i] not in b",}] \t\r\n":  # number, true, false, null
        i += 1
    return i


def member(b, i, key):
    """b[i] is '{': index of the value of `key` (bytes), or -1."""
    i = ws(b, i + 1)
    while b[i] != 125:
        if b[i] != 34:
            raise ValueError("bad object")
        j = skip_string(b, i)
        k = b[i + 1:j - 1]
        i = ws(b, j)
        if b[i] != 58:
            raise ValueError("missing ':'")
        i = ws(b, i + 1)
        if k == key:
            return i
        i = ws(b, skip_value(b, i))
        if b[i] == 44:
            i = ws(b, i + 1)
    return -1
