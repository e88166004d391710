"""The admin client: ``Admin`` and the typed values it takes and returns."""

from .acls import ANY_ACL, AclBinding
from .client import Admin
from .results import (AbortTransactionSpec, AlterConfigOp, BrokerInfo, ClusterDescription, ConfigEntry,
                      ConfigResource, ConfigSource, GroupDescription, GroupListing, MemberDescription, NewTopic,
                      OpenTransaction, OpType, PartitionInfo, ProducerState, ResourceType, ShareGroupDescription,
                      ShareMemberDescription, SharePartitionOffset, TopicDescription, TransactionDescription,
                      TransactionListing)
from .tokens import DelegationToken
from .topics import EARLIEST, LATEST, MAX_TIMESTAMP
from .transactions import DEFAULT_MAX_TRANSACTION_TIMEOUT_MS

__all__ = ["ANY_ACL", "AclBinding", "AbortTransactionSpec", "Admin", "AlterConfigOp", "BrokerInfo",
           "ClusterDescription", "ConfigEntry", "ConfigResource", "ConfigSource", "DelegationToken",
           "DEFAULT_MAX_TRANSACTION_TIMEOUT_MS", "EARLIEST", "GroupDescription", "GroupListing", "LATEST",
           "MAX_TIMESTAMP", "MemberDescription", "NewTopic", "OpenTransaction", "OpType", "PartitionInfo",
           "ProducerState", "ResourceType", "ShareGroupDescription", "ShareMemberDescription", "SharePartitionOffset",
           "TopicDescription", "TransactionDescription", "TransactionListing"]
