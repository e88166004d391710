"""The client's error taxonomy (issue 18 item 4): a static class per Kafka code, every error keeps its
number, and fatal / abortable / retriable are one function of (request kind, code), the Java client's."""

import ast
from pathlib import Path

import pytest

import weir.client.errors as errors
from weir.client.error_policy import Outcome, classify
from weir.client.errors import (BrokerResponseError, InvalidTxnStateError, OffsetOutOfRangeError,
                                TransactionalIdAuthorizationFailedError, UnknownServerError, error_for, error_instance)
from weir.client.consumer import fetcher
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors

CLIENT = Path(errors.__file__).parent


def test_every_code_has_a_class_written_in_the_source_named_after_it():
    written = {node.name for node in ast.walk(ast.parse((CLIENT / "error_codes.py").read_text()))
               if isinstance(node, ast.ClassDef)}
    for code in Errors:
        if code == Errors.NONE:
            continue
        cls = error_for(code)
        assert cls.code == code and cls.__name__ in written and getattr(errors, cls.__name__) is cls
        assert cls.retriable == code.retriable
    assert "globals()" not in "".join(p.read_text() for p in CLIENT.rglob("*.py"))


def test_an_unknown_code_keeps_its_number():
    error = error_instance(1234, "from a newer broker")
    assert isinstance(error, UnknownServerError) and error.code == 1234 and "1234" in str(error)
    assert not error.retriable


def test_one_offset_out_of_range_error():
    assert fetcher.OffsetOutOfRangeError is OffsetOutOfRangeError is error_for(Errors.OFFSET_OUT_OF_RANGE)


@pytest.mark.parametrize("request_kind, code, outcome", [
    # The Java TransactionManager: INVALID_TXN_STATE is fatal to the requests that can get it ...
    (ApiKey.ADD_PARTITIONS_TO_TXN, Errors.INVALID_TXN_STATE, Outcome.FATAL),
    (ApiKey.END_TXN, Errors.INVALID_TXN_STATE, Outcome.FATAL),
    (ApiKey.ADD_OFFSETS_TO_TXN, Errors.INVALID_TXN_STATE, Outcome.FATAL),
    # ... and TRANSACTIONAL_ID_AUTHORIZATION_FAILED fatal except to InitProducerId (abortable there).
    (ApiKey.END_TXN, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Outcome.FATAL),
    (ApiKey.FIND_COORDINATOR, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Outcome.FATAL),
    (ApiKey.INIT_PRODUCER_ID, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Outcome.ABORTABLE),
    (ApiKey.FIND_COORDINATOR, Errors.GROUP_AUTHORIZATION_FAILED, Outcome.ABORTABLE),
    (ApiKey.END_TXN, Errors.CONCURRENT_TRANSACTIONS, Outcome.RETRIABLE),
    (ApiKey.FETCH, Errors.NOT_LEADER_OR_FOLLOWER, Outcome.RETRIABLE),
    (None, Errors.PRODUCER_FENCED, Outcome.FATAL),
    (ApiKey.PRODUCE, Errors.MESSAGE_TOO_LARGE, Outcome.ABORTABLE_WITH_BUMP),
])
def test_the_decision_is_one_function_of_request_and_code(request_kind, code, outcome):
    assert classify(request_kind, code) is outcome
    error = error_instance(code, request=request_kind)
    assert error.outcome is outcome  # what the error says is what the function says
    assert error.fatal == (outcome is Outcome.FATAL) and error.retriable == (outcome is Outcome.RETRIABLE)


def test_errors_answer_for_the_request_they_came_from():
    assert InvalidTxnStateError(request=ApiKey.END_TXN).fatal
    assert TransactionalIdAuthorizationFailedError(request=ApiKey.INIT_PRODUCER_ID).abortable
    assert isinstance(error_instance(Errors.NOT_COORDINATOR), BrokerResponseError)
