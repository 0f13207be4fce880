"""The ``recall`` tool: exact passages of the whole persisted conversation, found through the
full-text index (``chat.search``: ``lookup``), how a hit is quoted (``quotes``), the earlier
images that match (``images``) and a whole tool result brought back by its id
(``tool_results``). Apart from ``chat.search``
because it reads ``chat.history``, which reads ``chat.documents``, which reads ``chat.search``.
"""
