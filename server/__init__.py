"""taskwire: an agent server that shows what sub-agents do, live."""

__version__ = "0.1.0"
