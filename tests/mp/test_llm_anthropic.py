# What only the Anthropic provider does: prompt caching across turns (the scenarios
# both providers share are in test_llm_providers.py).
import llmcases as c

FIXTURES = ("fake_anthropic",)
TIMEOUT = 90


def test_cache_survives_memory_change():
    c.cache_survives_memory_change("anthropic")
