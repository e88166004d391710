"""Transaction coordinator pieces (the producer-id allocator lives here)."""
