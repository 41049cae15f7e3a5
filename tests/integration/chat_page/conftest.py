"""The fixtures of browsing.py, for every chat page test in this folder (one browser and one
site for all of them)."""
from .browsing import browser, page, site  # noqa: F401
