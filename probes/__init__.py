"""The node probe (``troubleshoot probe``); also runs alone as ``python3 probes/node_probe.py``."""
