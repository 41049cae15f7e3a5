"""How gunicorn serves this repository's WSGI apps, whichever it runs (the chat alone in
production, the monolith under `make serve`): the worker, its reader and its request parser.
Not part of PHP's `/spaces/` tree; the design is in worker.py's docstring."""
