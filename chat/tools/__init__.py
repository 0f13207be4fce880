"""The tools of a conversation as settings shape them: approved tools and switched-off
sources, and the ``fetch_url`` tool's network settings.
"""
