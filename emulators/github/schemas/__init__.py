"""The GitHub emulator's input: marshmallow schemas that read request bodies and query strings
into the typed values the rules take, answering GitHub's own errors (base.py says how)."""
