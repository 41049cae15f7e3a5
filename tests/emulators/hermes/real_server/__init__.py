"""The Hermes emulator side by side with the real server (Hermes 0.19.0): recorded exchanges
replayed against the emulator, and against a real server when HERMES_ORACLE_URL is set."""
