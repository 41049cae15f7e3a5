"""GitHub's primary rate limits and conditional requests (README.md in this folder)."""
