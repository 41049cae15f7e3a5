"""Who a request is (a user's token, an App's JWT, an installation token, nobody) and what its
credential may do (emulators/github/README.md, "GitHub Apps")."""
