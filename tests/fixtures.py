"""Shared pytest fixtures (CPython side)."""
