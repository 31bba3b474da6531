"""Request faults match the transaction APIs by API key and transactional id (``txn=ID``): a fault on one
transactional id's EndTxn leaves another's alone; the compact syntax and the wire form keep the match."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from controller.faults.spec import FaultSpec, parse_faults
from protocol.codes import ApiKey, ErrorCode
from tests.support.transactions import Wire, virtual_cluster


def test_the_txn_match_reads_and_writes_as_it_was_given() -> None:
    [spec] = parse_faults("error=CONCURRENT_TRANSACTIONS api=EndTxn txn=app-1 once")
    assert spec.transactional_id == "app-1" and spec.needs_body
    assert str(spec) == "error=CONCURRENT_TRANSACTIONS api=EndTxn txn=app-1 once"
    assert FaultSpec.from_wire(spec.to_wire()) == spec


def test_a_fault_on_one_transactional_ids_requests_leaves_the_others() -> None:
    with virtual_cluster() as server, ThreadPoolExecutor(4) as pool:
        wire = Wire(server, pool)
        try:
            faults = server.faults
            faults.inject_error(
                ApiKey.INIT_PRODUCER_ID, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", transactional_id="no"
            )
            faults.inject_error(
                ApiKey.INIT_PRODUCER_ID, "COORDINATOR_LOAD_IN_PROGRESS", transactional_id="yes"
            ).once()
            assert wire.find("yes")["ErrorCode"] == ErrorCode.NONE
            assert wire.init("yes")["ErrorCode"] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            allowed = wire.init("yes")
            assert allowed["ErrorCode"] == ErrorCode.NONE
            assert wire.init("no")["ErrorCode"] == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            producer = (allowed["ProducerId"], allowed["ProducerEpoch"])
            assert wire.end("no", producer, True)["ErrorCode"] == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        finally:
            wire.close()
