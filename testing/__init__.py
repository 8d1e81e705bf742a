"""Test doubles: an OpenAI-compatible fake endpoint with scripted answers, a rule-based fact-sheet reader and a fake
profiler. Tests and benchmarks import them; no product module does (``tests/test_layering.py``)."""
