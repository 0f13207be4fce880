"""Markdown to sanitised HTML for answers, and the stored HTML of an answer for a read."""
