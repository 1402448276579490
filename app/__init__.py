"""The Streamlit explorer of a mixture store: `mixture explore STORE` runs `app/main.py`."""
