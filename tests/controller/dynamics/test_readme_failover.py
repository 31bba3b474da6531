from protocol.client import BlockingClient


def partition_0(client, topic):
    response = client.send("MetadataRequest", {"Topics": [{"Name": topic}]}, version=12)
    [partition] = response["Topics"][0]["Partitions"]
    return partition["LeaderId"], partition["LeaderEpoch"], partition["IsrNodes"]


def test_a_crashed_leader_fails_over_after_the_session_timeout(placement_sim_factory):
    server = placement_sim_factory(brokers=[(0, "a"), (1, "b"), (2, "c")], clock="virtual")
    with BlockingClient.connect(server.bootstrap) as client:
        client.send(
            "CreateTopicsRequest",
            {
                "Topics": [
                    {
                        "Name": "orders",
                        "NumPartitions": -1,
                        "ReplicationFactor": -1,
                        "Assignments": [{"PartitionIndex": 0, "BrokerIds": [0, 1, 2]}],
                        "Configs": [],
                    }
                ],
                "timeoutMs": 5000,
                "validateOnly": False,
            },
        )
        assert partition_0(client, "orders") == (0, 0, [0, 1, 2])

        server.stop_broker(0, "crash")  # its connections close; the controller has not noticed yet
        server.advance(8999)
        assert partition_0(client, "orders") == (0, 0, [0, 1, 2])

        server.advance(1)  # broker.session.timeout.ms (9000) after its last heartbeat: fenced
        assert partition_0(client, "orders") == (1, 1, [1, 2])  # the first in-sync replica, epoch + 1
        state = server.partition_state("orders", 0)
        assert (state.leader, state.leader_epoch, state.offline_replicas) == (1, 1, (0,))
        assert [e.cause for e in server.events() if e.subject == "orders-0"][-1].startswith("broker 0 fenced")

        server.start_broker(0)  # same address; registers again, unfenced at its first heartbeat (2 s)
        server.advance(2100)  # ... and back in the ISR at the next replication tick (nothing to copy)
        assert partition_0(client, "orders") == (1, 1, [0, 1, 2])  # no leadership taken back by itself
        assert server.elect("orders", 0, "preferred").error is None  # ElectLeaders PREFERRED
        assert partition_0(client, "orders") == (0, 2, [0, 1, 2])
