"""Measurements of an opened model: the per-block breakdown (the instrumenter and the one measurement loop), the
round's components timed apart, the verify cost curve, the roofline's costs, the clock probe, the acceptance trace,
the Metal GPU trace, and the support doctor behind ``specscope check``."""
