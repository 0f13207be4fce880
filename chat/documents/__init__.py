"""Documents as attachments: the text extracted at upload, and how a run sees them (inline,
as an outline, or through ``read_document``).
"""
