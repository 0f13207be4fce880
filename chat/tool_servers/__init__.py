"""Tool servers (MCP): the process's configured servers and their one pool, and their admin.
The ``ToolServer`` model is in ``chat.models.tool_servers`` with the app's other models.
"""
