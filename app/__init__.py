"""The Streamlit explorer of a mixture store (`app/` in the repository): `mixture explore STORE` runs its `main.py`."""

from pathlib import Path

MAIN = Path(__file__).resolve().parent / "main.py"  # the script `streamlit run` executes
SERVE = Path(__file__).resolve().parent / "serve.py"  # main.py as `mixture explore` serves it (gate, page paths)
