"""The mixture spec: YAML validated with pydantic, with errors that name file and field."""
