# web_search's state between calls (tools/search.py goes after a call on a short heap):
# the provider that answered last, tried first next time, and the APIs' bases (tests
# point these at fake servers).
TAVILY_BASE = "https://api.tavily.com"
BRAVE_BASE = "https://api.search.brave.com"
prefer = None
