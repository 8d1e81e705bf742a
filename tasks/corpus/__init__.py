"""Corpus stage: files, folders or Hugging Face datasets in; ``Document`` and ``Chunk`` records out.

``ingest`` reads and validates the sources (bad rows reported with file:line), ``text`` chunks and counts tokens.
"""
