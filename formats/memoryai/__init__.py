"""MemoryAI Protocol v1: the bundle format (no Django)."""
