"""The full-text index over a user's conversations: what is indexed (messages, documents,
tool results, as passages), the text as the index sees it, and the search itself.
"""
