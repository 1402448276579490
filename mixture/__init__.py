"""mixture: declarative pretraining-corpus mixtures you can build, audit and browse."""

__version__ = "0.2.0"  # 0.2.0: content type as kind + code language; language `und` without best effort
