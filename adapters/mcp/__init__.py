"""The governed tools served over the Model Context Protocol; adapter layer."""
