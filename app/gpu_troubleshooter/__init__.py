"""Diagnose failed GPU/ML jobs on HPC clusters from their logs."""
__version__ = "0.1.0"
