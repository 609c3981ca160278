"""Feedback control laws and closed-loop simulations (see the modules)."""
