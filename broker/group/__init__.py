"""Group coordinator: committed offsets now; classic group membership comes with its own issue."""
