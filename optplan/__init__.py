"""optplan: optimal static memory planning for tensor programs."""

__version__ = "0.1.0"
