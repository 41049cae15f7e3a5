"""What tests/ and bench/ share: real gunicorn on loopback (`servers`) and the counter emulator
that exercises the whole runtime contract (`counter_service`). Development only: not shipped."""
