"""The one compiled module: text signal counts (mixture/text/_signals.c). Optional: without a C compiler the
install still succeeds and the build takes the same counts in Python (mixture/text/kernel.py), only slower."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("mixture.text._signals", ["mixture/text/_signals.c"],
                             depends=["mixture/text/_signals_impl.h", "mixture/text/_code_tokens.h"], optional=True,
                             extra_compile_args=["-O2", "-Wall", "-Wno-unused-function"])])
