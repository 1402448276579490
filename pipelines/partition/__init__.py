"""Stages `sample`, `fit` and `assign`: the fit's sample, the frozen model, the documents written to their cells."""
