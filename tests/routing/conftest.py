"""Routing fixtures live in tests/conftest.py (shared with orchestration)."""
