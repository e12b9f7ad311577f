"""One module per chart (pyqtgraph). ``export.chart_image`` renders any of them offscreen from a Session."""

from .acceptance import AcceptanceChart
from .breakdown import BreakdownChart
from .division import BudgetChart, DivisionChart
from .probe import ProbeChart
from .throughput import ThroughputChart
from .tokens_per_round import TokensPerRoundChart
from .tune import TuneChart
from .verify_cost import VerifyCurveChart

CHARTS = {
    "throughput": ThroughputChart,
    "acceptance": AcceptanceChart,
    "tokens_per_round": TokensPerRoundChart,
    "breakdown": BreakdownChart,
    "division": DivisionChart,
    "probe": ProbeChart,
    "verify_cost": VerifyCurveChart,
    "tune": TuneChart,
}

__all__ = ["CHARTS", "AcceptanceChart", "BudgetChart", "BreakdownChart", "DivisionChart", "ProbeChart", "ThroughputChart", "TokensPerRoundChart", "TuneChart", "VerifyCurveChart"]
