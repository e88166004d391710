"""Share groups (KIP-932): membership, the simple assignor, heartbeats. Records are share-partitions'
(``broker/share``)."""
