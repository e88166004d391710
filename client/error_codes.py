"""One exception class per Kafka error code, written out so type checkers and IDEs see them.

Generated once from ``weir.protocol.errors.Errors`` (tests/client/test_errors.py checks that every
code has its class here, named after Kafka's code: NOT_COORDINATOR is ``NotCoordinatorError``).
What a caller may do about each (retry, abort, close) is ``client.error_policy``'s decision.
"""

from __future__ import annotations

from weir.protocol.errors import Errors

from .errors import BrokerResponseError


class UnknownServerError(BrokerResponseError):
    code = Errors.UNKNOWN_SERVER_ERROR

class OffsetOutOfRangeError(BrokerResponseError):
    code = Errors.OFFSET_OUT_OF_RANGE

class CorruptMessageError(BrokerResponseError):
    code = Errors.CORRUPT_MESSAGE

class UnknownTopicOrPartitionError(BrokerResponseError):
    code = Errors.UNKNOWN_TOPIC_OR_PARTITION

class InvalidFetchSizeError(BrokerResponseError):
    code = Errors.INVALID_FETCH_SIZE

class LeaderNotAvailableError(BrokerResponseError):
    code = Errors.LEADER_NOT_AVAILABLE

class NotLeaderOrFollowerError(BrokerResponseError):
    code = Errors.NOT_LEADER_OR_FOLLOWER

class RequestTimedOutError(BrokerResponseError):
    code = Errors.REQUEST_TIMED_OUT

class MessageTooLargeError(BrokerResponseError):
    code = Errors.MESSAGE_TOO_LARGE

class NetworkException(BrokerResponseError):
    code = Errors.NETWORK_EXCEPTION

class CoordinatorLoadInProgressError(BrokerResponseError):
    code = Errors.COORDINATOR_LOAD_IN_PROGRESS

class CoordinatorNotAvailableError(BrokerResponseError):
    code = Errors.COORDINATOR_NOT_AVAILABLE

class NotCoordinatorError(BrokerResponseError):
    code = Errors.NOT_COORDINATOR

class InvalidTopicException(BrokerResponseError):
    code = Errors.INVALID_TOPIC_EXCEPTION

class RecordListTooLargeError(BrokerResponseError):
    code = Errors.RECORD_LIST_TOO_LARGE

class NotEnoughReplicasError(BrokerResponseError):
    code = Errors.NOT_ENOUGH_REPLICAS

class InvalidRequiredAcksError(BrokerResponseError):
    code = Errors.INVALID_REQUIRED_ACKS

class IllegalGenerationError(BrokerResponseError):
    code = Errors.ILLEGAL_GENERATION

class InconsistentGroupProtocolError(BrokerResponseError):
    code = Errors.INCONSISTENT_GROUP_PROTOCOL

class InvalidGroupIdError(BrokerResponseError):
    code = Errors.INVALID_GROUP_ID

class UnknownMemberIdError(BrokerResponseError):
    code = Errors.UNKNOWN_MEMBER_ID

class InvalidSessionTimeoutError(BrokerResponseError):
    code = Errors.INVALID_SESSION_TIMEOUT

class RebalanceInProgressError(BrokerResponseError):
    code = Errors.REBALANCE_IN_PROGRESS

class InvalidCommitOffsetSizeError(BrokerResponseError):
    code = Errors.INVALID_COMMIT_OFFSET_SIZE

class TopicAuthorizationFailedError(BrokerResponseError):
    code = Errors.TOPIC_AUTHORIZATION_FAILED

class GroupAuthorizationFailedError(BrokerResponseError):
    code = Errors.GROUP_AUTHORIZATION_FAILED

class ClusterAuthorizationFailedError(BrokerResponseError):
    code = Errors.CLUSTER_AUTHORIZATION_FAILED

class InvalidTimestampError(BrokerResponseError):
    code = Errors.INVALID_TIMESTAMP

class UnsupportedSaslMechanismError(BrokerResponseError):
    code = Errors.UNSUPPORTED_SASL_MECHANISM

class IllegalSaslStateError(BrokerResponseError):
    code = Errors.ILLEGAL_SASL_STATE

class UnsupportedVersionError(BrokerResponseError):
    code = Errors.UNSUPPORTED_VERSION

class TopicAlreadyExistsError(BrokerResponseError):
    code = Errors.TOPIC_ALREADY_EXISTS

class InvalidPartitionsError(BrokerResponseError):
    code = Errors.INVALID_PARTITIONS

class InvalidReplicationFactorError(BrokerResponseError):
    code = Errors.INVALID_REPLICATION_FACTOR

class InvalidReplicaAssignmentError(BrokerResponseError):
    code = Errors.INVALID_REPLICA_ASSIGNMENT

class InvalidConfigError(BrokerResponseError):
    code = Errors.INVALID_CONFIG

class NotControllerError(BrokerResponseError):
    code = Errors.NOT_CONTROLLER

class InvalidRequestError(BrokerResponseError):
    code = Errors.INVALID_REQUEST

class UnsupportedForMessageFormatError(BrokerResponseError):
    code = Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT

class PolicyViolationError(BrokerResponseError):
    code = Errors.POLICY_VIOLATION

class OutOfOrderSequenceNumberError(BrokerResponseError):
    code = Errors.OUT_OF_ORDER_SEQUENCE_NUMBER

class DuplicateSequenceNumberError(BrokerResponseError):
    code = Errors.DUPLICATE_SEQUENCE_NUMBER

class InvalidProducerEpochError(BrokerResponseError):
    code = Errors.INVALID_PRODUCER_EPOCH

class InvalidTxnStateError(BrokerResponseError):
    code = Errors.INVALID_TXN_STATE

class InvalidProducerIdMappingError(BrokerResponseError):
    code = Errors.INVALID_PRODUCER_ID_MAPPING

class InvalidTransactionTimeoutError(BrokerResponseError):
    code = Errors.INVALID_TRANSACTION_TIMEOUT

class ConcurrentTransactionsError(BrokerResponseError):
    code = Errors.CONCURRENT_TRANSACTIONS

class TransactionCoordinatorFencedError(BrokerResponseError):
    code = Errors.TRANSACTION_COORDINATOR_FENCED

class TransactionalIdAuthorizationFailedError(BrokerResponseError):
    code = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED

class SecurityDisabledError(BrokerResponseError):
    code = Errors.SECURITY_DISABLED

class OperationNotAttemptedError(BrokerResponseError):
    code = Errors.OPERATION_NOT_ATTEMPTED

class KafkaStorageError(BrokerResponseError):
    code = Errors.KAFKA_STORAGE_ERROR

class SaslAuthenticationFailedError(BrokerResponseError):
    code = Errors.SASL_AUTHENTICATION_FAILED

class UnknownProducerIdError(BrokerResponseError):
    code = Errors.UNKNOWN_PRODUCER_ID

class DelegationTokenAuthDisabledError(BrokerResponseError):
    code = Errors.DELEGATION_TOKEN_AUTH_DISABLED

class DelegationTokenNotFoundError(BrokerResponseError):
    code = Errors.DELEGATION_TOKEN_NOT_FOUND

class DelegationTokenOwnerMismatchError(BrokerResponseError):
    code = Errors.DELEGATION_TOKEN_OWNER_MISMATCH

class DelegationTokenRequestNotAllowedError(BrokerResponseError):
    code = Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED

class DelegationTokenAuthorizationFailedError(BrokerResponseError):
    code = Errors.DELEGATION_TOKEN_AUTHORIZATION_FAILED

class DelegationTokenExpiredError(BrokerResponseError):
    code = Errors.DELEGATION_TOKEN_EXPIRED

class InvalidPrincipalTypeError(BrokerResponseError):
    code = Errors.INVALID_PRINCIPAL_TYPE

class NonEmptyGroupError(BrokerResponseError):
    code = Errors.NON_EMPTY_GROUP

class GroupIdNotFoundError(BrokerResponseError):
    code = Errors.GROUP_ID_NOT_FOUND

class FetchSessionIdNotFoundError(BrokerResponseError):
    code = Errors.FETCH_SESSION_ID_NOT_FOUND

class InvalidFetchSessionEpochError(BrokerResponseError):
    code = Errors.INVALID_FETCH_SESSION_EPOCH

class TopicDeletionDisabledError(BrokerResponseError):
    code = Errors.TOPIC_DELETION_DISABLED

class FencedLeaderEpochError(BrokerResponseError):
    code = Errors.FENCED_LEADER_EPOCH

class UnknownLeaderEpochError(BrokerResponseError):
    code = Errors.UNKNOWN_LEADER_EPOCH

class UnsupportedCompressionTypeError(BrokerResponseError):
    code = Errors.UNSUPPORTED_COMPRESSION_TYPE

class OffsetNotAvailableError(BrokerResponseError):
    code = Errors.OFFSET_NOT_AVAILABLE

class MemberIdRequiredError(BrokerResponseError):
    code = Errors.MEMBER_ID_REQUIRED

class GroupMaxSizeReachedError(BrokerResponseError):
    code = Errors.GROUP_MAX_SIZE_REACHED

class FencedInstanceIdError(BrokerResponseError):
    code = Errors.FENCED_INSTANCE_ID

class ElectionNotNeededError(BrokerResponseError):
    code = Errors.ELECTION_NOT_NEEDED

class NoReassignmentInProgressError(BrokerResponseError):
    code = Errors.NO_REASSIGNMENT_IN_PROGRESS

class GroupSubscribedToTopicError(BrokerResponseError):
    code = Errors.GROUP_SUBSCRIBED_TO_TOPIC

class InvalidRecordError(BrokerResponseError):
    code = Errors.INVALID_RECORD

class ThrottlingQuotaExceededError(BrokerResponseError):
    code = Errors.THROTTLING_QUOTA_EXCEEDED

class UnstableOffsetCommitError(BrokerResponseError):
    code = Errors.UNSTABLE_OFFSET_COMMIT

class ProducerFencedError(BrokerResponseError):
    code = Errors.PRODUCER_FENCED

class ResourceNotFoundError(BrokerResponseError):
    code = Errors.RESOURCE_NOT_FOUND

class DuplicateResourceError(BrokerResponseError):
    code = Errors.DUPLICATE_RESOURCE

class UnacceptableCredentialError(BrokerResponseError):
    code = Errors.UNACCEPTABLE_CREDENTIAL

class InvalidUpdateVersionError(BrokerResponseError):
    code = Errors.INVALID_UPDATE_VERSION

class UnknownTopicIdError(BrokerResponseError):
    code = Errors.UNKNOWN_TOPIC_ID

class TransactionalIdNotFoundError(BrokerResponseError):
    code = Errors.TRANSACTIONAL_ID_NOT_FOUND

class FencedMemberEpochError(BrokerResponseError):
    code = Errors.FENCED_MEMBER_EPOCH

class UnreleasedInstanceIdError(BrokerResponseError):
    code = Errors.UNRELEASED_INSTANCE_ID

class UnsupportedAssignorError(BrokerResponseError):
    code = Errors.UNSUPPORTED_ASSIGNOR

class StaleMemberEpochError(BrokerResponseError):
    code = Errors.STALE_MEMBER_EPOCH

class MismatchedEndpointTypeError(BrokerResponseError):
    code = Errors.MISMATCHED_ENDPOINT_TYPE

class UnsupportedEndpointTypeError(BrokerResponseError):
    code = Errors.UNSUPPORTED_ENDPOINT_TYPE

class UnknownControllerIdError(BrokerResponseError):
    code = Errors.UNKNOWN_CONTROLLER_ID

class UnknownSubscriptionIdError(BrokerResponseError):
    code = Errors.UNKNOWN_SUBSCRIPTION_ID

class TelemetryTooLargeError(BrokerResponseError):
    code = Errors.TELEMETRY_TOO_LARGE

class InvalidRegistrationError(BrokerResponseError):
    code = Errors.INVALID_REGISTRATION

class TransactionAbortableError(BrokerResponseError):
    code = Errors.TRANSACTION_ABORTABLE

class InvalidRecordStateError(BrokerResponseError):
    code = Errors.INVALID_RECORD_STATE

class ShareSessionNotFoundError(BrokerResponseError):
    code = Errors.SHARE_SESSION_NOT_FOUND

class InvalidShareSessionEpochError(BrokerResponseError):
    code = Errors.INVALID_SHARE_SESSION_EPOCH

class FencedStateEpochError(BrokerResponseError):
    code = Errors.FENCED_STATE_EPOCH

class InvalidVoterKeyError(BrokerResponseError):
    code = Errors.INVALID_VOTER_KEY

class DuplicateVoterError(BrokerResponseError):
    code = Errors.DUPLICATE_VOTER

class VoterNotFoundError(BrokerResponseError):
    code = Errors.VOTER_NOT_FOUND

class InvalidRegularExpressionError(BrokerResponseError):
    code = Errors.INVALID_REGULAR_EXPRESSION

class RebootstrapRequiredError(BrokerResponseError):
    code = Errors.REBOOTSTRAP_REQUIRED

class StreamsInvalidTopologyError(BrokerResponseError):
    code = Errors.STREAMS_INVALID_TOPOLOGY

class StreamsInvalidTopologyEpochError(BrokerResponseError):
    code = Errors.STREAMS_INVALID_TOPOLOGY_EPOCH

class StreamsTopologyFencedError(BrokerResponseError):
    code = Errors.STREAMS_TOPOLOGY_FENCED

class ShareSessionLimitReachedError(BrokerResponseError):
    code = Errors.SHARE_SESSION_LIMIT_REACHED

class GroupDeletionFailedError(BrokerResponseError):
    code = Errors.GROUP_DELETION_FAILED

class StreamsTopologyDescriptionUpdateFailedError(BrokerResponseError):
    code = Errors.STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED

class ControllerIdNotRegisteredError(BrokerResponseError):
    code = Errors.CONTROLLER_ID_NOT_REGISTERED


__all__ = [
    "ClusterAuthorizationFailedError", "ConcurrentTransactionsError", "CoordinatorLoadInProgressError",
    "CoordinatorNotAvailableError", "CorruptMessageError", "DuplicateResourceError", "DuplicateSequenceNumberError",
    "ElectionNotNeededError", "NoReassignmentInProgressError", "ThrottlingQuotaExceededError",
    "FencedInstanceIdError", "FencedLeaderEpochError", "FencedMemberEpochError", "FetchSessionIdNotFoundError",
    "GroupAuthorizationFailedError", "GroupIdNotFoundError", "GroupMaxSizeReachedError",
    "GroupSubscribedToTopicError", "IllegalGenerationError", "IllegalSaslStateError",
    "InconsistentGroupProtocolError", "InvalidCommitOffsetSizeError", "InvalidConfigError",
    "InvalidFetchSessionEpochError", "InvalidFetchSizeError", "InvalidGroupIdError", "InvalidPartitionsError",
    "InvalidProducerEpochError", "InvalidProducerIdMappingError", "InvalidRecordError",
    "InvalidRegularExpressionError", "InvalidReplicaAssignmentError", "InvalidReplicationFactorError",
    "InvalidRequestError", "InvalidRequiredAcksError", "InvalidSessionTimeoutError", "InvalidTimestampError",
    "InvalidTopicException", "InvalidTransactionTimeoutError", "InvalidTxnStateError", "InvalidUpdateVersionError",
    "KafkaStorageError", "LeaderNotAvailableError", "MemberIdRequiredError", "MessageTooLargeError",
    "MismatchedEndpointTypeError", "NetworkException", "NonEmptyGroupError", "NotControllerError",
    "NotCoordinatorError", "NotEnoughReplicasError", "NotLeaderOrFollowerError", "OffsetNotAvailableError",
    "OffsetOutOfRangeError", "OperationNotAttemptedError", "OutOfOrderSequenceNumberError", "PolicyViolationError",
    "ProducerFencedError", "RebalanceInProgressError", "RecordListTooLargeError", "RequestTimedOutError",
    "ResourceNotFoundError", "SaslAuthenticationFailedError", "SecurityDisabledError", "StaleMemberEpochError",
    "TopicAlreadyExistsError",
    "TopicAuthorizationFailedError", "TopicDeletionDisabledError", "TransactionAbortableError",
    "TransactionCoordinatorFencedError", "TransactionalIdAuthorizationFailedError", "TransactionalIdNotFoundError",
    "UnacceptableCredentialError", "UnknownLeaderEpochError", "UnknownMemberIdError", "UnknownProducerIdError",
    "UnknownServerError", "UnknownTopicIdError", "UnknownTopicOrPartitionError", "UnreleasedInstanceIdError",
    "UnstableOffsetCommitError", "UnsupportedAssignorError", "UnsupportedCompressionTypeError",
    "UnsupportedEndpointTypeError", "UnsupportedForMessageFormatError", "UnsupportedSaslMechanismError",
    "UnsupportedVersionError",
    # delegation tokens (KIP-48)
    "DelegationTokenAuthDisabledError", "DelegationTokenAuthorizationFailedError", "DelegationTokenExpiredError",
    "DelegationTokenNotFoundError", "DelegationTokenOwnerMismatchError", "DelegationTokenRequestNotAllowedError",
    "InvalidPrincipalTypeError",
    # Kafka 4.x: KRaft, telemetry, share groups (KIP-932), streams groups (KIP-1071), KIP-1242
    "UnknownControllerIdError",
    "UnknownSubscriptionIdError",
    "TelemetryTooLargeError",
    "InvalidRegistrationError",
    "InvalidRecordStateError",
    "ShareSessionNotFoundError",
    "InvalidShareSessionEpochError",
    "FencedStateEpochError",
    "InvalidVoterKeyError",
    "DuplicateVoterError",
    "VoterNotFoundError",
    "RebootstrapRequiredError",
    "StreamsInvalidTopologyError",
    "StreamsInvalidTopologyEpochError",
    "StreamsTopologyFencedError",
    "ShareSessionLimitReachedError",
    "GroupDeletionFailedError",
    "StreamsTopologyDescriptionUpdateFailedError",
    "ControllerIdNotRegisteredError",
]
