"""The metadata image made from the last one and the changed topics equals one made from scratch, after
any sequence of changes: topics created, re-created, deleted, grown, partitions changed, brokers fenced."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.cluster import Cluster, PartitionChange
from controller.image import ImageBuilder, MetadataImage
from controller.placement.api import UsableBroker

BROKERS = [UsableBroker(i, None, False) for i in range(4)]
NAMES = ["a", "b", "c", "d", "e"]

operations = st.lists(
    st.one_of(
        st.tuples(st.just("create"), st.sampled_from(NAMES), st.integers(1, 3)),
        st.tuples(st.just("delete"), st.sampled_from(NAMES)),
        st.tuples(st.just("grow"), st.sampled_from(NAMES)),
        st.tuples(st.just("leader"), st.sampled_from(NAMES), st.integers(0, 3)),
        st.tuples(st.just("fence"), st.integers(0, 3), st.booleans()),
        st.tuples(
            st.just("image"),
        ),
    ),
    max_size=40,
)


def apply(cluster: Cluster, op: tuple) -> None:
    kind = op[0]
    if kind == "create" and op[1] not in cluster.topics:
        cluster.add_topic(op[1], [[p % 4, (p + 1) % 4] for p in range(op[2])])
    elif kind == "delete" and op[1] in cluster.topics:
        cluster.delete_topic(op[1])
    elif kind == "grow" and op[1] in cluster.topics:
        cluster.add_partitions(op[1], [[2, 3]])
    elif kind == "leader" and op[1] in cluster.topics:
        cluster.apply_changes(
            [PartitionChange.of(cluster.partition(op[1], 0), "test", leader=op[2], leader_epoch=op[2] + 1)]
        )
    elif kind == "fence":
        cluster.update_broker(op[1], "test", fenced=op[2])


def shape(image: MetadataImage) -> list:
    topics = [(name, t.topic_id, t.version, t.partitions) for name, t in image.topics.items()]
    by_id = sorted((str(i), t.name) for i, t in image.topics_by_id.items())
    return [image.generation, image.brokers, topics, by_id]


@settings(max_examples=300, deadline=None)
@given(operations)
def test_the_image_made_from_changes_is_the_image_made_from_scratch(ops: list[tuple]) -> None:
    cluster = Cluster(BROKERS, seed=1)
    builder = ImageBuilder(cluster)
    earlier: list[tuple[MetadataImage, list]] = []
    for op in ops:
        if op[0] == "image":
            image = builder.image()
            earlier.append((image, shape(image)))
        else:
            apply(cluster, op)
    assert shape(builder.image()) == shape(ImageBuilder(cluster).image())
    assert list(builder.image().topics) == list(cluster.topics)
    for image, seen in earlier:  # an image handed out never changes (isolated brokers keep theirs)
        assert shape(image) == seen


def test_an_image_costs_the_changed_topics_not_the_cluster() -> None:
    cluster = Cluster(BROKERS, seed=1)
    for i in range(2000):
        cluster.add_topic(f"t{i}", [[0, 1]])
    builder = ImageBuilder(cluster)
    first = builder.image()
    cluster.apply_changes([PartitionChange.of(cluster.partition("t7", 0), "test", leader=1, leader_epoch=1)])
    assert builder.stale() == 1
    second = builder.image()
    changed = [name for name in second.topics if second.topics[name] is not first.topics[name]]
    assert changed == ["t7"]
    assert builder.stale() == 0


def test_what_is_stale_is_counted_in_partitions() -> None:
    """The Metadata handler rebuilds the image in turns past a count of stale partitions: a hundred new
    topics of a thousand partitions each were rebuilt in one step (0.4 s) when topics were counted."""
    cluster = Cluster(BROKERS, seed=1)
    cluster.add_topic("small", [[0, 1]])
    builder = ImageBuilder(cluster)
    builder.image()
    for i in range(3):
        cluster.add_topic(f"wide{i}", [[i % 4, (i + 1) % 4]] * 1000)
    cluster.apply_changes(
        [PartitionChange.of(cluster.partition("wide0", 5), "test", leader=1, leader_epoch=1)]
    )
    assert builder.stale() == 3000
    builder.image()
    assert builder.stale() == 0


def test_builds_in_turns_that_overlap_keep_the_newest_image() -> None:
    async def run() -> None:
        cluster = Cluster(BROKERS, seed=1)
        for i in range(3000):
            cluster.add_topic(f"t{i}", [[0, 1]])
        builder = ImageBuilder(cluster)
        builder.image()
        for i in range(0, 3000, 2):
            cluster.apply_changes(
                [PartitionChange.of(cluster.partition(f"t{i}", 0), "test", leader=1, leader_epoch=1)]
            )
        older = asyncio.ensure_future(builder.image_in_turns())
        await asyncio.sleep(0)
        cluster.delete_topic("t1")
        newer = await builder.image_in_turns()
        await older
        assert "t1" not in newer.topics and "t1" not in builder.image().topics
        assert shape(builder.image()) == shape(ImageBuilder(cluster).image())

    asyncio.run(run())


def test_changes_nobody_reads_are_not_kept_forever() -> None:
    cluster = Cluster(BROKERS, seed=1)
    cluster.add_topic("t", [[0, 1]])
    builder = ImageBuilder(cluster)
    builder.image()
    for epoch in range(300_000):
        cluster.apply_changes([PartitionChange.of(cluster.partition("t", 0), "test", leader_epoch=epoch + 1)])
    assert cluster.touched_since(0) is None  # dropped: the next image looks at every topic
    assert shape(builder.image()) == shape(ImageBuilder(cluster).image())
