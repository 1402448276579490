"""The explorer's pages, each a Streamlit script run by path (see `mixture.explorer.main`)."""
