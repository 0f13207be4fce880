"""The chat websocket, ``ws/chat/<conversation_id>/``: its route (``routing``), the consumer
that checks each frame and hands it to ``chat.runs`` (``consumer``), the frames a user may
send over all their sockets (``rate_limit``), outgoing frames cut to the server's size
(``frames``) and the socket's interface language (``languages``). docs/protocol.md
describes the frames.
"""
