"""``placement-sim configs describe|alter``: topic and broker configs of a running simulator, as
``kafka-configs.sh`` shows and changes them.

These speak Kafka's protocol (DescribeConfigs, IncrementalAlterConfigs, Metadata, DescribeCluster), so
they work against any Kafka broker too, and take ``kafka-configs.sh``'s options (``--entity-type
topics|brokers``, ``--entity-name``, ``--entity-default``, ``--all``, ``--add-config k=v,k2=[a,b]``,
``--delete-config k``) and print its lines (``Dynamic configs for topic orders are:``, then
``  key=value sensitive=false synonyms={SOURCE:key=value, ...}``).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from placement_sim.cli.connection import (
    add_connection_options,
    describe_cluster,
    describe_error,
    run_with_client,
)
from protocol.client import KafkaClient

__all__ = ["parse_add_config", "register"]

_TOPIC, _BROKER = 2, 4
#: DescribeConfigs' ConfigSource names (Kafka's ``ConfigEntry.ConfigSource``), by wire id.
_SOURCES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
}
_SET, _DELETE = 0, 1


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    configs = subparsers.add_parser(
        "configs",
        description="Describe and alter configs over Kafka's protocol, as kafka-configs.sh does.",
    )
    actions = configs.add_subparsers(dest="configs_action", metavar="ACTION", required=True)
    describe = actions.add_parser(
        "describe", parents=[common], help="the dynamic configs of topics or brokers (all of them with --all)"
    )
    _entity_options(describe)
    describe.add_argument("--all", action="store_true", help="every config, not only the dynamic ones")
    add_connection_options(describe)
    describe.set_defaults(func=describe_command)

    alter = actions.add_parser(
        "alter",
        parents=[common],
        help="set or delete configs of one topic or broker (IncrementalAlterConfigs)",
    )
    _entity_options(alter)
    alter.add_argument(
        "--add-config",
        type=parse_add_config,
        default={},
        metavar="K=V,...",
        help="configs to set, e.g. min.insync.replicas=2,cleanup.policy=[compact,delete]",
    )
    alter.add_argument(
        "--delete-config",
        type=lambda text: [k.strip() for k in text.split(",") if k.strip()],
        default=[],
        metavar="K,...",
        help="configs to delete (back to the next level's value)",
    )
    add_connection_options(alter)
    alter.set_defaults(func=alter_command)


def _entity_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--entity-type", required=True, choices=("topics", "brokers"), help="topics or brokers"
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--entity-name", metavar="NAME", help="a topic's name or a broker's id (default: all)")
    which.add_argument("--entity-default", action="store_true", help="the configs set for every broker")


def parse_add_config(text: str) -> dict[str, str]:
    """``k=v,k2=[a,b]`` as ``kafka-configs.sh`` reads ``--add-config``: commas inside brackets belong to
    the value, and the brackets go."""
    pairs: dict[str, str] = {}
    for item in re.findall(r"(?:[^,\[]|\[[^\]]*\])+", text):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {item.strip()!r}")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        pairs[key.strip()] = value
    return pairs


def _resource(args: argparse.Namespace) -> tuple[int, str | None]:
    if args.entity_default:
        if args.entity_type != "brokers":
            raise ValueError("--entity-default applies to brokers only")
        return _BROKER, ""
    return (_TOPIC if args.entity_type == "topics" else _BROKER), args.entity_name


def describe_command(args: argparse.Namespace) -> int:
    try:
        kind, name = _resource(args)
    except ValueError as exc:
        print(f"placement-sim: {exc}", file=sys.stderr)
        return 2

    async def action(client: KafkaClient) -> int:
        names = [name] if name is not None else await _every(client, kind)
        response = await client.send(
            "DescribeConfigsRequest",
            {
                "Resources": [
                    {"ResourceType": kind, "ResourceName": n, "ConfigurationKeys": None} for n in names
                ],
                "IncludeSynonyms": True,
            },
        )
        status = 0
        for result in response["Results"]:
            entity = result["ResourceName"]
            if result["ErrorCode"] != 0:
                print(
                    f"placement-sim: {args.entity_type[:-1]} {entity}: "
                    f"{describe_error(result['ErrorCode'], result.get('ErrorMessage'))}",
                    file=sys.stderr,
                )
                status = 1
                continue
            print(_heading(args.entity_type, entity, args.all))
            dynamic = 1 if kind == _TOPIC else (3 if entity == "" else 2)
            for entry in result["Configs"]:
                if args.all or entry.get("ConfigSource") == dynamic:
                    print(_entry_line(entry))
        return status

    return run_with_client(args, action)


async def _every(client: KafkaClient, kind: int) -> list[str]:
    """Every topic, or every broker and then the cluster default (``kafka-configs.sh``'s order)."""
    if kind == _TOPIC:
        response = await client.send("MetadataRequest", {"Topics": None, "AllowAutoTopicCreation": False})
        return sorted(t["Name"] for t in response["Topics"] if t["ErrorCode"] == 0)
    cluster = await describe_cluster(client)
    return [str(b["BrokerId"]) for b in sorted(cluster["Brokers"], key=lambda b: b["BrokerId"])] + [""]


def _heading(entity_type: str, entity: str, every: bool) -> str:
    if entity_type == "brokers" and entity == "":
        return "Default configs for brokers in the cluster are:"
    return f"{'All' if every else 'Dynamic'} configs for {entity_type[:-1]} {entity} are:"


def _entry_line(entry: dict[str, Any]) -> str:
    synonyms = ", ".join(
        f"{_SOURCES.get(s['Source'], 'UNKNOWN')}:{s['Name']}={_java(s['Value'])}"
        for s in entry.get("Synonyms", [])
    )
    sensitive = "true" if entry["IsSensitive"] else "false"
    return f"  {entry['Name']}={_java(entry['Value'])} sensitive={sensitive} synonyms={{{synonyms}}}"


def _java(value: str | None) -> str:
    return "null" if value is None else value


def alter_command(args: argparse.Namespace) -> int:
    try:
        kind, name = _resource(args)
    except ValueError as exc:
        print(f"placement-sim: {exc}", file=sys.stderr)
        return 2
    if name is None:
        print("placement-sim: alter needs --entity-name or --entity-default", file=sys.stderr)
        return 2
    if not args.add_config and not args.delete_config:
        print("placement-sim: nothing to alter: give --add-config or --delete-config", file=sys.stderr)
        return 2

    async def action(client: KafkaClient) -> int:
        current = await client.send(
            "DescribeConfigsRequest",
            {"Resources": [{"ResourceType": kind, "ResourceName": name, "ConfigurationKeys": None}]},
        )
        [described] = current["Results"]
        if described["ErrorCode"] != 0:
            print(
                f"placement-sim: {describe_error(described['ErrorCode'], described.get('ErrorMessage'))}",
                file=sys.stderr,
            )
            return 1
        dynamic = 1 if kind == _TOPIC else (3 if name == "" else 2)
        set_now = {c["Name"] for c in described["Configs"] if c.get("ConfigSource") == dynamic}
        missing = [k for k in args.delete_config if k not in set_now]
        if missing:  # kafka-configs.sh refuses to delete what is not set
            print(f"placement-sim: Invalid config(s): {','.join(missing)}", file=sys.stderr)
            return 1
        changes = [{"Name": k, "ConfigOperation": _SET, "Value": v} for k, v in args.add_config.items()]
        changes += [{"Name": k, "ConfigOperation": _DELETE, "Value": None} for k in args.delete_config]
        response = await client.send(
            "IncrementalAlterConfigsRequest",
            {
                "Resources": [{"ResourceType": kind, "ResourceName": name, "Configs": changes}],
                "ValidateOnly": False,
            },
        )
        [result] = response["Responses"]
        if result["ErrorCode"] != 0:
            print(
                f"placement-sim: {describe_error(result['ErrorCode'], result.get('ErrorMessage'))}",
                file=sys.stderr,
            )
            return 1
        if name == "":
            print("Completed updating default config for brokers in the cluster.")
        else:
            print(f"Completed updating config for {args.entity_type[:-1]} {name}.")
        return 0

    return run_with_client(args, action)
