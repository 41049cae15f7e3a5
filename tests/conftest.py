"""What every test shares: the relay runs open (NEWOS4_RELAY_ACCESS=open, as on a trusted
network) in every process a test starts, so tests that are not about access need not pair.
Tests about access set pairing or allowlist themselves."""
import os

os.environ["NEWOS4_RELAY_ACCESS"] = "open"
