"""DescribeConfigs (32): the configs of topics and brokers with their sources, as Kafka's ``ConfigHelper``
answers them; see :mod:`controller.config_admin`.

A topic's configs are resolved as the answering broker has them (the bootstrap listener has no per-broker
values); a broker id names a registered broker, and the broker that answers only describes itself, as in
Kafka; the empty name lists the configs set for every broker. Synonyms come with ``IncludeSynonyms``
(v1+), documentation with ``IncludeDocumentation`` (v3+). A resource type Kafka does not know (it knows
2 topic, 4 broker, 8 broker logger, 16 client metrics, 32 group) fails the whole request: every resource
INVALID_REQUEST with that error's message, as Apache Kafka 4 answers. With an authorizer, a resource the client may not DESCRIBE_CONFIGS is refused as Kafka refuses it
(:func:`controller.handlers.alter_configs.refused`).
"""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation
from controller.answers import Sized
from controller.config.topic_configs import ConfigEntry, ConfigSource
from controller.config_admin import Described
from controller.handlers import RequestContext
from controller.handlers.alter_configs import refused
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.DESCRIBE_CONFIGS
VERSIONS = (1, 4)


#: ``ConfigResource.Type``'s ids.
_KNOWN_TYPES = frozenset({2, 4, 8, 16, 32})


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> Sized:
    if any(r["ResourceType"] not in _KNOWN_TYPES for r in request["Resources"]):
        unknown = {
            "ThrottleTimeMs": 0,
            "Results": [
                {
                    "ErrorCode": ErrorCode.INVALID_REQUEST,
                    "ErrorMessage": ErrorCode.INVALID_REQUEST.message,
                    "ResourceType": r["ResourceType"],
                    "ResourceName": r["ResourceName"],
                    "Configs": [],
                }
                for r in request["Resources"]
            ],
        }
        return Sized(unknown, len(unknown["Results"]))
    synonyms = bool(request.get("IncludeSynonyms", False)) and version >= 1
    documentation = bool(request.get("IncludeDocumentation", False)) and version >= 3
    resources = request["Resources"]
    denied = refused(ctx, resources, Operation.DESCRIBE_CONFIGS)
    described = await ctx.controller.config_admin.describe(
        [
            (r["ResourceType"], r["ResourceName"], r["ConfigurationKeys"])
            for index, r in enumerate(resources)
            if index not in denied
        ],
        answering_broker=ctx.listener_broker,
    )
    if denied:
        made = iter(described)
        described = [
            Described(r["ResourceType"], r["ResourceName"], denied[index]) if index in denied else next(made)
            for index, r in enumerate(resources)
        ]

    def response() -> dict[str, Any]:
        # Topics that set no config share their entries (Cluster.topic_config_entries): each is made once.
        made: dict[int, dict[str, Any]] = {}

        def entry(e: ConfigEntry) -> dict[str, Any]:
            found = made.get(id(e))
            if found is None:
                found = made[id(e)] = _entry(e, version, synonyms, documentation)
            return found

        return {
            "ThrottleTimeMs": 0,
            "Results": [
                {
                    "ErrorCode": ErrorCode.NONE if d.error is None else d.error,
                    "ErrorMessage": d.message if d.message is not None else "",  # Kafka's empty message
                    "ResourceType": d.resource_type,
                    "ResourceName": d.resource_name,
                    "Configs": [entry(e) for e in d.configs],
                }
                for d in described
            ],
        }

    # The entries are resolved already (immutable): the response is made and encoded off the loop.
    return Sized(response, sum(len(d.configs) for d in described) + len(described))


def _entry(entry: ConfigEntry, version: int, synonyms: bool, documentation: bool) -> dict[str, Any]:
    return {
        "Name": entry.name,
        "Value": None if entry.sensitive else entry.value,
        "ReadOnly": entry.read_only,
        "IsDefault": version == 0 and entry.source is ConfigSource.DEFAULT_CONFIG,
        "ConfigSource": entry.source,
        "IsSensitive": entry.sensitive,
        "Synonyms": [{"Name": n, "Value": v, "Source": s} for n, v, s in entry.synonyms] if synonyms else [],
        "ConfigType": entry.kind,
        "Documentation": entry.doc if documentation else None,
    }


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {
        "ThrottleTimeMs": 0,
        "Results": [
            {
                "ErrorCode": code,
                "ErrorMessage": message,
                "ResourceType": r["ResourceType"],
                "ResourceName": r["ResourceName"],
                "Configs": [],
            }
            for r in request["Resources"]
        ],
    }
