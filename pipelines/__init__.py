"""datatrove steps of the mixture build and the assembly of its stages."""
