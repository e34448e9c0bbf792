"""Single-player text games with dense per-turn rewards (``game:*``)."""
