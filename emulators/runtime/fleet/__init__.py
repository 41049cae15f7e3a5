"""A fleet: several services in one process, each on its own port, and a control listener that
steers one namespace across them all (emulators/runtime/README.md, "The fleet")."""
