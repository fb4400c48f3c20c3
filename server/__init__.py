"""The PostgreSQL v3 wire-protocol server, its sessions and the `heron` command line.

This package never imports torch: AI work reaches the engine process through the planner.
"""
