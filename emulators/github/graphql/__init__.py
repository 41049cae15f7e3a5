"""GitHub's GraphQL API (`POST /graphql`, `POST /api/graphql`) on GitHub's published schema,
over the same state and rules as REST and git (README.md)."""
