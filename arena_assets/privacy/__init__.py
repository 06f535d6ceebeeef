"""Privacy beyond redaction: safe reject rows and previews, retention of raw logs, and the
right to be forgotten (``forget.py``).

Submodules are imported directly (``from arena_assets.clean.rejects import ...``): the
ingest parser imports ``rejects`` and ``forget`` imports the ingest package, so this file
stays empty of imports to keep that from becoming a cycle.
"""
