"""Images as attachments: upload validation, and the text that stands in for an image once
it is no longer sent. The fast model's better description (``chat.image_describer``) reads
pixels through ``chat.history``, which reads this package, so it stays beside it.
"""
