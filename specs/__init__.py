"""Example specs shipped with the package: `demo.yaml` is the template that `mixture demo` writes beside its corpus."""
