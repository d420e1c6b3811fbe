# LLM layer: HTTP client (http), providers, retries.
