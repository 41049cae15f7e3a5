"""The state every worker shares, as rows of one SQLite file: records, clocks, fault rules, the
journal and the timeline, with the per-process caches and files beside them."""
