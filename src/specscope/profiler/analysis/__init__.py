"""Figures from a session: statistics and intervals, the summary (folded live or at once), the prediction and
its verdict, comparisons, sweeps, the roofline and tune's prediction; the session file written with them."""
