"""The session: what a run measured, as plain data (the record, its folding of events, its schema). It computes no
figures: ``profiler.analysis`` does, from it (an import contract holds the direction)."""
