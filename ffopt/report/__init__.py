"""Presenting a saved plan: an HTML report (``html``) and an animated GIF of the arm (``animation``)."""
