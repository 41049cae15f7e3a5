"""The admin plane under `/__admin`: one falcon app (`app.py`) over route parts, one module per
feature, each declaring its routes the same way (emulators/README.md, "Layout")."""
