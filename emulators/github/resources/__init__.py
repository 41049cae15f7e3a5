"""The GitHub emulator's HTTP layer (moto's `responses`): one module of falcon resources per
area, each resource naming the operation of each method it answers; `request.py` holds what
they share. A resource reads the request through schemas/ and calls the rules (models/) with
typed arguments."""
