"""The HTTP JSON API (docs/protocol.md): the plumbing every view uses, and the views by
resource. The views sit here, above the concept packages they serve (search, versions,
tools, summaries), because they import chat.api.plumbing and chat.runs, which import those
packages: a view inside them would close an import cycle.
"""
