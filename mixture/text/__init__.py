"""Text processing shared by the build: normalisation, content type, quality signals."""
