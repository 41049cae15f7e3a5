"""The OpenAI-compatible surface: health, models, capabilities, chat completions and responses
over scripted replies (backend.py), and the resources over them."""
