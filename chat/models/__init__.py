"""The chat app's models, one module per concept; every model is importable from here
(``from chat.models import Message``), as the migrations and the rest of the code do."""

from chat.models.attachments import ATTACHMENT_EXTENSIONS, Attachment, attachment_path
from chat.models.conversations import Conversation, Message
from chat.models.projects import Project
from chat.models.search import SearchDocument
from chat.models.summaries import ContextSummary
from chat.models.tool_approvals import ToolApproval
from chat.models.tool_results import ToolResult
from chat.models.tool_servers import ToolServer

__all__ = [
    "ATTACHMENT_EXTENSIONS",
    "Attachment",
    "ContextSummary",
    "Conversation",
    "Message",
    "Project",
    "SearchDocument",
    "ToolApproval",
    "ToolResult",
    "ToolServer",
    "attachment_path",
]
