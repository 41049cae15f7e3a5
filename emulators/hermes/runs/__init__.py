"""The runs API (`/v1/runs...`): the run rules (backend.py), approvals of dangerous commands,
and the resources over them."""
