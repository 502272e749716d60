"""The warning category every trac_metrics function uses for an explicit NaN or a degraded result."""


class TracWarning(UserWarning):
    """Raised (as a warning) when a metric or feature is returned as NaN or computed on degenerate data."""
