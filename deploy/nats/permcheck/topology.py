"""The JetStream topology as crates/wire/src/topology.rs, crates/bus/src/connect.rs and lanes.rs
declare it, and the configurations async-nats 0.42 sends for it."""

import base64

PRIORITIES = ["critical", "high", "normal", "low"]
SYNTH, PROVE, EVENTS = "SNARKFLOW_SYNTH", "SNARKFLOW_PROVE", "SNARKFLOW_EVENTS"
JOBS, IDEMPOTENCY, PARTITIONS = "snarkflow_jobs", "snarkflow_idempotency", "snarkflow_partitions"
OBJ = f"OBJ_{PARTITIONS}"
EVENTS_CONSUMER = "gateway-ledger"
DEAD = "SNARKFLOW_DEAD_LETTERS"
DEAD_CONSUMER = "gateway-dead-letters"
NS = 1_000_000_000
ACK_WAIT = 30 * NS
MAX_DELIVER = 5
JOB_RETENTION = 7 * 24 * 3600 * NS
DUPLICATE_WINDOW = 10 * 60 * NS
CHUNK_SIZE = 512 * 1024


def work_stream(name, subjects):
    return {
        "name": name,
        "subjects": subjects if isinstance(subjects, list) else [subjects],
        "retention": "workqueue",
        "storage": "file",
        "duplicate_window": DUPLICATE_WINDOW,
        "max_bytes": 4 << 30,
        "discard": "new",
    }


def kv_stream(bucket):
    return {
        "name": f"KV_{bucket}",
        "subjects": [f"$KV.{bucket}.>"],
        "max_msgs_per_subject": 1,
        "storage": "file",
        "allow_rollup_hdrs": True,
        "deny_delete": True,
        "allow_direct": True,
        "discard": "new",
        "num_replicas": 1,
        "max_age": JOB_RETENTION,
    }


OBJ_STREAM = {
    "name": OBJ,
    "description": "synthesized partitions between synth-workers and gpu-workers",
    "subjects": [f"$O.{PARTITIONS}.C.>", f"$O.{PARTITIONS}.M.>"],
    "max_age": 24 * 3600 * NS,
    "storage": "file",
    "num_replicas": 1,
    "discard": "new",
    "allow_rollup_hdrs": True,
    "allow_direct": True,
}


def lane(stage):
    return "synth" if stage == SYNTH else "prove"


def lane_consumers(stage):
    """(name, filter subject) of the lane consumers of a work stream (wire::lane_consumer)."""
    return [(f"{lane(stage)}-{p}", f"snarkflow.{lane(stage)}.{p}") for p in PRIORITIES]


def lane_consumer_config(name, filter_subject):
    return {
        "durable_name": name,
        "filter_subject": filter_subject,
        "ack_policy": "explicit",
        "ack_wait": ACK_WAIT,
        "max_deliver": MAX_DELIVER,
        "deliver_policy": "all",
        "replay_policy": "instant",
    }


def consumer_create_subject(stream, config):
    """async-nats 0.42: CONSUMER.CREATE.<stream>.<name>.<filter> for a named consumer, else
    CONSUMER.CREATE.<stream> (the ordered consumers behind KV listing and object reads)."""
    name = config.get("name") or config.get("durable_name")
    if not name:
        return f"$JS.API.CONSUMER.CREATE.{stream}"
    suffix = f".{config['filter_subject']}" if config.get("filter_subject") else ""
    return f"$JS.API.CONSUMER.CREATE.{stream}.{name}{suffix}"


def ordered_config(deliver_subject, filter_subject, deliver_policy="all", description=None):
    """async-nats' push::OrderedConfig as the server receives it."""
    config = {
        "deliver_subject": deliver_subject,
        "deliver_policy": deliver_policy,
        "ack_policy": "none",
        "max_deliver": 1,
        "filter_subject": filter_subject,
        "replay_policy": "instant",
        "flow_control": True,
        "idle_heartbeat": 5 * NS,
        "inactive_threshold": 30 * NS,
        "num_replicas": 1,
        "mem_storage": True,
    }
    if description:
        config["description"] = description
    return config


def encode_object_name(name):
    # async-nats: base64 URL_SAFE, with padding
    return base64.urlsafe_b64encode(name.encode()).decode()
