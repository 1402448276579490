"""Tests of the Streamlit explorer (app/)."""
