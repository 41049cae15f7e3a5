"""The chat's host side: the relay that hands waiting threads to Hermes and writes its answers
back, run by cron (a pass a minute) or as the watcher (a pass as soon as something changed).

cli (the command line) → cron (a cron run), daemon (the watcher as a service) → watch →
passes → approvals, lost_runs (the pass's collaborators, answering with outcomes) → polling,
answers, run_events, state, hermes_client, access (who reaches Hermes, asked before anything
of a thread goes there), modes (cron and the watcher relay with one policy) → schemas (how
the files they keep are read and written) → records (what those files hold, typed); below
them the chat's service, store and files. approvals_cli is the host's `scripts/chat.py
approvals` and `approve`, over approvals and state; access_cli is its `scripts/chat.py
pairing …`, over access.
"""
