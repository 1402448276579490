"""mixture: declarative pretraining-corpus mixtures you can build, audit and browse."""

__version__ = "0.1.0"
