"""GitHub Apps: their registration, installations and installation tokens (apps/README in
emulators/github/README.md, "GitHub Apps")."""
