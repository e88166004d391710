"""Share-partition state (KIP-932): in-flight records, acquisition locks, delivery counts, sessions."""
