"""Plain frozen values shared by every layer (stdlib only)."""
