"""Making a run: its configuration and prompts, the protocol (the phases of one run, in the engine's process), the
event stream it emits, and the processes around it (worker, launcher for several ranks, the one event pump)."""
