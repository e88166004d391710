from .handoff import PreparedTxnState, complete_prepared_transaction, fence_transactional_id
from .producer import Producer

__all__ = ["PreparedTxnState", "Producer", "complete_prepared_transaction", "fence_transactional_id"]
