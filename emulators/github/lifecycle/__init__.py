"""A pull request's life after it opens: CI results (statuses, checks), the conversation
(issues, comments, labels, assignees), review, branch protection and merges; resources.py holds
their routes, each other module one mixin of `models.GitHubBackend`."""
