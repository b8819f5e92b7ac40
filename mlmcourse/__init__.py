"""Helpers for the BERT masked-LM course (no solutions live here)."""
