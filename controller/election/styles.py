"""Each style's election service, chosen once, when the configured policy has started and said its style."""

from __future__ import annotations

from controller.clock import Clock
from controller.cluster import Cluster
from controller.config import ServerConfig
from controller.election.api import ElectionStyle
from controller.election.fluvio_style import FluvioElection
from controller.election.kafka_style import KafkaElection
from controller.election.loader import ELECTION_POLICIES
from controller.election.service import ElectionService
from controller.plugins.isolation import start_runner

__all__ = ["start_election_service"]

SERVICES: dict[ElectionStyle, type[ElectionService]] = {
    ElectionStyle.KAFKA: KafkaElection,
    ElectionStyle.FLUVIO: FluvioElection,
}


async def start_election_service(config: ServerConfig, cluster: Cluster, clock: Clock) -> ElectionService:
    """Starts the configured policy (isolated like placers) and the election service of its style."""
    runner = await start_runner(
        ELECTION_POLICIES,
        config.election_policy,
        config.plugin_properties(),
        config.election_isolation,
        config.placer_start_ms / 1000,
        config.placer_max_memory_mb,
    )
    raw = runner.attributes.get("style") or ElectionStyle.KAFKA
    try:
        style = ElectionStyle(raw)
    except ValueError:
        await runner.close()
        styles = ", ".join(s.value for s in ElectionStyle)
        raise ValueError(f"election policy {runner.label}: style {raw!r} is not one of {styles}") from None
    return SERVICES[style](config, cluster, clock, runner)
