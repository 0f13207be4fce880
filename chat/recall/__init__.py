"""The ``recall`` tool: exact passages of the whole persisted conversation, found through the
full-text index (``chat.search``), and how a hit is quoted. Apart from ``chat.search``
because it reads ``chat.history``, which reads ``chat.documents``, which reads ``chat.search``.
"""
