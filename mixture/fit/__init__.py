"""Fitting on a sample: the lexical embedder, spherical k-means + coarsening, labels, quality calibration."""
