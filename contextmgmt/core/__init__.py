"""fimone's context-management core: plain Python, no Django (DESIGN §1–§2)."""
