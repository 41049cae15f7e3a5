"""Two ways to stand in for Hermes in tests: `driver` plays a tool-using Hermes through the
Hermes emulator's admin plane; `stub` is a scripted runs API that sends the bytes a test chooses."""
