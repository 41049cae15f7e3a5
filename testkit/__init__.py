"""What tests/ and bench/ share (fixtures stay in each tests folder's conftest.py): real gunicorn
on loopback (`servers`), the READMEs' shell blocks run as a user runs them (`shell`), the counter
emulator that exercises the whole runtime contract (`counter_service`), a driver that plays a
tool-using Hermes through the Hermes emulator (`hermes.driver`) and a scripted Hermes runs API
that sends the bytes a test chooses (`hermes.stub`), a loop run beside a `with` block
(`background`). Development only: not shipped."""
