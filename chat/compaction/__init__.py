"""Steering compaction from the chat side: persisted summaries, pins and edits, and the
compaction ledger of a conversation.
"""
