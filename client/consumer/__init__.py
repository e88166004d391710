from .consumer import Consumer
from .group import CommitFailedError, GroupMetadata, RebalanceListener

__all__ = ["CommitFailedError", "Consumer", "GroupMetadata", "RebalanceListener"]
