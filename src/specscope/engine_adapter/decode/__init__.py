"""Decoding: plain steps and speculative rounds as generators of plain records, sampling, and the check that
speculative decoding emitted what plain decoding would have."""
