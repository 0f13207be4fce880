"""Projects: instructions and knowledge files shared by a set of conversations
(docs/projects.md). ``services`` writes, ``selectors`` reads; the model is
``chat.models.Project``."""
