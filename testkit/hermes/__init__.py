"""Ways to stand in for Hermes in tests: `driver` plays a tool-using Hermes through the Hermes
emulator's admin plane; `stub` is a scripted runs API that sends the bytes a test chooses;
`proxy` breaks the connections to a Hermes as a restarting one does."""
