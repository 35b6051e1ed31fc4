"""Every operation of every role, expected allowed, denied or allowed by design (LIMIT).
"""

import asyncio
import json
import os
import uuid

import nats

from .role import Denied, Failed, Role
from .topology import (
    DEAD, DEAD_CONSUMER, EVENTS, EVENTS_CONSUMER, IDEMPOTENCY, JOBS, OBJ, PARTITIONS, PROVE, SYNTH,
    lane_consumer_config, ordered_config, work_stream,
)


# --- the checks -------------------------------------------------------------------------------


def describe(value):
    if value is None:
        return ""
    if hasattr(value, "subject") and hasattr(value, "reply"):  # a delivered message
        return f"message on {value.subject}, reply {value.reply}"
    return str(value)


class Checker:
    def __init__(self, results):
        self.results = results

    async def expect(self, role, operation, expected, coro):
        """Run `coro` as `role`; `expected` is 'allow', 'deny' or 'limit' (an operation subject
        permissions cannot restrict: it must succeed, and is reported as such)."""
        name = role.name if isinstance(role, Role) else role
        value = None
        try:
            value = await coro
            actual, detail = "allowed", describe(value)
        except Denied as d:
            actual, detail = "denied", f"permissions violation on {d.what}"
        except Failed as f:
            actual, detail = "failed", str(f)
        except Exception as e:  # noqa: BLE001 - any surprise is a failed check
            actual, detail = "error", f"{type(e).__name__}: {e}"
        want = {"allow": "allowed", "limit": "allowed", "deny": "denied"}[expected]
        self.results.add(name, operation, expected.upper(), actual, actual == want, detail)
        return value if actual == "allowed" else None


async def auth_is_required(url, password):
    """An anonymous connection and a wrong password must both be refused."""
    async def quiet(_e):
        pass

    outcomes = []
    for user, pw in ((None, None), ("gateway", password + "x")):
        try:
            kwargs = {"user": user, "password": pw} if user else {}
            nc = await nats.connect(
                url, allow_reconnect=False, max_reconnect_attempts=0, connect_timeout=2, error_cb=quiet, **kwargs
            )
            await nc.close()
            outcomes.append("accepted")
        except Exception:  # noqa: BLE001
            outcomes.append("refused")
    if outcomes != ["refused", "refused"]:
        raise Failed(f"anonymous / wrong password: {outcomes}")
    return "anonymous and wrong-password connections refused"


async def run_checks(url, passwords, results):
    c = Checker(results)
    gw = Role("gateway", "gateway", passwords["gateway"], "_INBOX_gateway")
    sw = Role("synth-worker", "synth-worker", passwords["synth-worker"], "_INBOX_synth")
    pw = Role("gpu-worker", "gpu-worker", passwords["gpu-worker"], "_INBOX_gpu")

    await c.expect("anyone", "anonymous / wrong-password connections refused", "allow", auth_is_required(url, passwords["gateway"]))
    for role in (gw, sw, pw):
        await c.expect(role, f"connect as {role.user} (inbox {role.inbox_prefix})", "allow", role.connect(url))

    job = str(uuid.uuid4())
    record = {"id": job, "state": "queued", "priority": "high", "partitions": 1}
    input_name, partition_name = f"{job}/input", f"{job}/0"
    input_data = os.urandom(6 * 1024 * 1024 + 12345)  # 13 chunks: enough to draw flow control
    partition_data = os.urandom(3 * 1024 * 1024 + 7)

    # --- start-up order: a worker before the gateway waits (it may not create) -----------------
    await c.expect(sw, "Bus::connect before the gateway: STREAM.CREATE.SNARKFLOW_SYNTH", "deny",
                   sw.get_or_create_stream(work_stream(SYNTH, "snarkflow.synth.>"), create=True))
    await c.expect(gw, "Bus::connect: create every stream, consumer, bucket", "allow", gw.declare(create=True))
    await c.expect(gw, "Bus::connect again: look-ups only", "allow", gw.declare(create=False))
    await c.expect(sw, "Bus::connect: look up the topology", "allow", sw.declare(create=False))
    await c.expect(pw, "Bus::connect: look up the topology", "allow", pw.declare(create=False))

    # --- gateway: submitting a job ------------------------------------------------------------
    await c.expect(gw, "KV claim idempotency key (create, rev 0)", "allow",
                   gw.kv_write(IDEMPOTENCY, "key-1", job.encode(), 0))
    await c.expect(gw, "KV read idempotency key (direct get)", "allow", _check_value(gw.kv_get(IDEMPOTENCY, "key-1"), job.encode()))
    await c.expect(gw, "object put job input (info, chunks, metadata)", "allow", _size(gw.obj_put(input_name, input_data)))
    rev = await c.expect(gw, "KV create job record (rev 0)", "allow", gw.kv_write(JOBS, job, json.dumps(record).encode(), 0))
    await c.expect(gw, "KV read job record (direct get)", "allow", _check_value(gw.kv_get(JOBS, job), json.dumps(record).encode()))
    record["state"] = "synthesizing"
    await c.expect(gw, "KV update job record (compare-and-set)", "allow",
                   gw.kv_write(JOBS, job, json.dumps(record).encode(), rev or 0))
    await c.expect(gw, "KV list jobs (stream info + ordered consumer)", "allow", _keys(gw.kv_list(JOBS)))
    # one record draws no flow-control request; answer one as the listing of a big ledger would
    # (the server ignores a reply for a consumer it does not know)
    await c.expect(gw, "flow-control reply for a listing ($JS.FC.KV_snarkflow_jobs.<consumer>.<id>)", "allow",
                   gw.publish(f"$JS.FC.KV_{JOBS}.AbCdEfGh.1a2B"))
    await c.expect(sw, "flow-control reply on KV_snarkflow_jobs (it may not list the ledger)", "deny",
                   sw.publish(f"$JS.FC.KV_{JOBS}.AbCdEfGh.1a2B"))
    await c.expect(gw, "JS publish snarkflow.synth.high (Nats-Msg-Id)", "allow",
                   gw.js_publish("snarkflow.synth.high", json.dumps({"job_id": job, "partition": 0}).encode(),
                                 headers={"Nats-Msg-Id": f"synth:{job}:0"}))
    await c.expect(gw, "queue depth: STREAM.INFO.SNARKFLOW_SYNTH", "allow", _messages(gw.api(f"$JS.API.STREAM.INFO.{SYNTH}")))
    await c.expect(gw, "ack pending: CONSUMER.INFO.SNARKFLOW_SYNTH.synth-high", "allow",
                   _ack_pending(gw.api(f"$JS.API.CONSUMER.INFO.{SYNTH}.synth-high", {})))
    # forbidden to the gateway
    await c.expect(gw, "JS publish snarkflow.prove.high", "deny", gw.js_publish("snarkflow.prove.high", b"{}"))
    await c.expect(gw, f"JS publish snarkflow.events.{job}", "deny", gw.js_publish(f"snarkflow.events.{job}", b"{}"))
    await c.expect(gw, "pull SNARKFLOW_SYNTH synth-high", "deny", gw.pull(SYNTH, "synth-high"))
    await c.expect(gw, "pull SNARKFLOW_PROVE prove-high", "deny", gw.pull(PROVE, "prove-high"))
    await c.expect(gw, "create a stream outside the topology", "deny",
                   gw.api("$JS.API.STREAM.CREATE.ROGUE", work_stream("ROGUE", "rogue.>")))
    await c.expect(gw, "create a consumer outside the topology", "deny",
                   gw.api(f"$JS.API.CONSUMER.CREATE.{SYNTH}.rogue.snarkflow.synth.high",
                          {"stream_name": SYNTH, "config": lane_consumer_config("rogue", "snarkflow.synth.high")}))
    await c.expect(gw, "STREAM.UPDATE.SNARKFLOW_SYNTH", "deny",
                   gw.api(f"$JS.API.STREAM.UPDATE.{SYNTH}", work_stream(SYNTH, "snarkflow.synth.>")))
    await c.expect(gw, "STREAM.DELETE.SNARKFLOW_SYNTH", "deny", gw.api(f"$JS.API.STREAM.DELETE.{SYNTH}"))
    await c.expect(gw, "STREAM.PURGE.SNARKFLOW_SYNTH", "deny", gw.api(f"$JS.API.STREAM.PURGE.{SYNTH}", {}))
    await c.expect(gw, "STREAM.PURGE.KV_snarkflow_jobs", "deny", gw.api(f"$JS.API.STREAM.PURGE.KV_{JOBS}", {}))
    await c.expect(gw, "CONSUMER.DELETE.SNARKFLOW_EVENTS.gateway-ledger", "deny",
                   gw.api(f"$JS.API.CONSUMER.DELETE.{EVENTS}.{EVENTS_CONSUMER}"))
    await c.expect(gw, "subscribe snarkflow.> (core snooping)", "deny", gw.subscribe("snarkflow.>"))
    await c.expect(gw, "subscribe _INBOX_synth.> (another role's replies)", "deny", gw.subscribe("_INBOX_synth.>"))
    # dead letters: the max-deliveries advisories kept in SNARKFLOW_DEAD_LETTERS (pulled from
    # the gateway's durable consumer), and reading and removing the dead task by its sequence
    # (10**9: no such message, the API answers 10037)
    await c.expect(gw, f"pull {DEAD} {DEAD_CONSUMER}", "allow", _none(gw.pull(DEAD, DEAD_CONSUMER)))
    await c.expect(sw, f"pull {DEAD} {DEAD_CONSUMER}", "deny", sw.pull(DEAD, DEAD_CONSUMER))
    await c.expect(pw, f"pull {DEAD} {DEAD_CONSUMER}", "deny", pw.pull(DEAD, DEAD_CONSUMER))
    for stream in (SYNTH, PROVE):
        await c.expect(gw, f"STREAM.MSG.GET.{stream} (a dead task)", "allow",
                       gw.api(f"$JS.API.STREAM.MSG.GET.{stream}", {"seq": 10**9}, ok_codes=(404,)))
        await c.expect(gw, f"STREAM.MSG.DELETE.{stream} (a dead task)", "allow",
                       gw.api(f"$JS.API.STREAM.MSG.DELETE.{stream}", {"seq": 10**9}, ok_codes=(404, 400, 500)))
    await c.expect(gw, "STREAM.MSG.DELETE.KV_snarkflow_jobs", "deny",
                   gw.api(f"$JS.API.STREAM.MSG.DELETE.KV_{JOBS}", {"seq": 1}))
    await c.expect(gw, "subscribe all advisories", "deny", gw.subscribe("$JS.EVENT.ADVISORY.>"))
    # control requests: the gateway asks every gpu-worker (GetStatus, PreloadSRS, EvictSRS)
    await c.expect(gw, "publish snarkflow.control.gpu.status", "allow", gw.publish("snarkflow.control.gpu.status", b"{}"))
    await c.expect(pw, "subscribe snarkflow.control.gpu.status", "allow", pw.subscribe("snarkflow.control.gpu.status"))
    await c.expect(pw, "subscribe snarkflow.control.gpu.params", "allow", pw.subscribe("snarkflow.control.gpu.params"))
    await c.expect(sw, "subscribe snarkflow.control.gpu.status", "deny", sw.subscribe("snarkflow.control.gpu.status"))
    await c.expect(pw, "publish snarkflow.control.gpu.status (forge a request)", "deny",
                   pw.publish("snarkflow.control.gpu.status", b"{}"))
    await c.expect(gw, "subscribe snarkflow.control.> (a gateway answers nothing)", "deny",
                   gw.subscribe("snarkflow.control.>"))

    # --- synth-worker: one synthesis ----------------------------------------------------------
    task = await c.expect(sw, "pull SNARKFLOW_SYNTH synth-high (MSG.NEXT)", "allow", _some(sw.pull(SYNTH, "synth-high")))
    if task is not None:
        await c.expect(sw, "+WPI heartbeat on the task ($JS.ACK...)", "allow", sw.publish(task.reply, b"+WPI"))
    for p in ("critical", "normal", "low"):
        await c.expect(sw, f"pull SNARKFLOW_SYNTH synth-{p} (empty lane)", "allow", _none(sw.pull(SYNTH, f"synth-{p}")))
    await c.expect(sw, "KV read job record (Ledger::is_live)", "allow", _found(sw.kv_get(JOBS, job)))
    fc_before = sw.flow_control_replies
    await c.expect(sw, "object get job input (info, ordered consumer)", "allow", _size(sw.obj_get(input_name)))
    await c.expect(sw, "  ...flow control answered ($JS.FC.OBJ_snarkflow_partitions...)", "allow",
                   _flow_control(sw, fc_before))
    await c.expect(sw, "object put partition (info, chunks, metadata)", "allow", _size(sw.obj_put(partition_name, partition_data)))
    await c.expect(sw, "JS publish snarkflow.prove.high (Nats-Msg-Id)", "allow",
                   sw.js_publish("snarkflow.prove.high", json.dumps({"job_id": job, "partition": 0, "object": partition_name}).encode(),
                                 headers={"Nats-Msg-Id": f"prove:{job}:0"}))
    await c.expect(sw, f"JS publish snarkflow.events.{job}", "allow",
                   sw.js_publish(f"snarkflow.events.{job}", json.dumps({"job_id": job, "body": "partition_synthesized"}).encode()))
    if task is not None:
        await c.expect(sw, "ack the task", "allow", sw.publish(task.reply, b""))
        await c.expect(gw, "  ...task acked: synth-high ack pending 0, stream empty", "allow", _lane_drained(gw, SYNTH, "synth-high"))
    # forbidden to the synth-worker
    await c.expect(sw, "JS publish snarkflow.synth.high", "deny", sw.js_publish("snarkflow.synth.high", b"{}"))
    await c.expect(sw, "KV write job record", "deny", sw.kv_write(JOBS, job, b"{}", 0))
    await c.expect(sw, "KV write idempotency key", "deny", sw.kv_write(IDEMPOTENCY, "key-2", b"x", 0))
    await c.expect(sw, "KV read idempotency key (direct get)", "deny", sw.kv_get(IDEMPOTENCY, "key-1"))
    await c.expect(sw, "KV list jobs (ordered consumer on KV_snarkflow_jobs)", "deny",
                   sw.api(f"$JS.API.CONSUMER.CREATE.KV_{JOBS}",
                          {"stream_name": f"KV_{JOBS}", "config": ordered_config(sw.nc.new_inbox(), f"$KV.{JOBS}.>")}))
    await c.expect(sw, "STREAM.CREATE.SNARKFLOW_SYNTH", "deny",
                   sw.api(f"$JS.API.STREAM.CREATE.{SYNTH}", work_stream(SYNTH, "snarkflow.synth.>")))
    await c.expect(sw, "create lane consumer synth-high", "deny",
                   sw.api(f"$JS.API.CONSUMER.CREATE.{SYNTH}.synth-high.snarkflow.synth.high",
                          {"stream_name": SYNTH, "config": lane_consumer_config("synth-high", "snarkflow.synth.high")}))
    await c.expect(sw, "create ephemeral consumer on SNARKFLOW_SYNTH", "deny",
                   sw.api(f"$JS.API.CONSUMER.CREATE.{SYNTH}", {"stream_name": SYNTH, "config": {"ack_policy": "explicit"}}))
    await c.expect(sw, "CONSUMER.DURABLE.CREATE.SNARKFLOW_SYNTH.x", "deny",
                   sw.api(f"$JS.API.CONSUMER.DURABLE.CREATE.{SYNTH}.x", {"stream_name": SYNTH, "config": {"durable_name": "x"}}))
    await c.expect(sw, "CONSUMER.DELETE.SNARKFLOW_SYNTH.synth-high", "deny", sw.api(f"$JS.API.CONSUMER.DELETE.{SYNTH}.synth-high"))
    await c.expect(sw, "STREAM.DELETE.SNARKFLOW_SYNTH", "deny", sw.api(f"$JS.API.STREAM.DELETE.{SYNTH}"))
    await c.expect(sw, "pull SNARKFLOW_PROVE prove-high", "deny", sw.pull(PROVE, "prove-high"))
    await c.expect(sw, "pull SNARKFLOW_EVENTS gateway-ledger", "deny", sw.pull(EVENTS, EVENTS_CONSUMER))
    # allowed because re-storing a redelivered partition purges the old chunks; the purge
    # filter is in the payload, so a synth-worker could purge any object's chunks
    await c.expect(sw, "object purge of chunks (STREAM.PURGE.OBJ_..., bucket-wide)", "limit",
                   sw.obj_purge_chunks({"nuid": "no-such-object"}))
    await c.expect(sw, "re-put an existing object name: purge of the old chunks", "allow",
                   sw.obj_put(partition_name, partition_data))
    await c.expect(sw, "subscribe _INBOX_gateway.>", "deny", sw.subscribe("_INBOX_gateway.>"))
    await c.expect(sw, "publish to _INBOX_gateway.x (spoof a reply)", "deny", sw.publish("_INBOX_gateway.x", b"{}"))
    await c.expect(sw, "subscribe snarkflow.prove.>", "deny", sw.subscribe("snarkflow.prove.>"))
    # what subjects cannot stop (documented in permissions.conf)
    await c.expect(gw, "(setup) object put a throw-away object", "allow", _size(gw.obj_put(f"{job}/scratch", b"scratch")))
    await c.expect(sw, "object delete marker on any object (metadata is bucket-wide)", "limit",
                   _marked(gw, sw.obj_delete_marker(f"{job}/scratch"), f"{job}/scratch"))
    await c.expect(sw, "push consumer on OBJ with deliver_subject $KV.snarkflow_jobs.<job>", "limit",
                   _deliver_subject_probe(gw, sw, job))

    # --- gpu-worker: one proof ----------------------------------------------------------------
    ptask = await c.expect(pw, "pull SNARKFLOW_PROVE prove-high (MSG.NEXT)", "allow", _some(pw.pull(PROVE, "prove-high")))
    if ptask is not None:
        await c.expect(pw, "+WPI heartbeat on the task", "allow", pw.publish(ptask.reply, b"+WPI"))
    await c.expect(pw, "pull SNARKFLOW_PROVE prove-low (empty lane)", "allow", _none(pw.pull(PROVE, "prove-low")))
    await c.expect(pw, "KV read job record (Ledger::is_live)", "allow", _found(pw.kv_get(JOBS, job)))
    fc_before = pw.flow_control_replies
    await c.expect(pw, "object get partition (info, ordered consumer)", "allow", _size(pw.obj_get(partition_name)))
    await c.expect(pw, "  ...flow control answered", "allow", _flow_control(pw, fc_before))
    await c.expect(pw, f"JS publish snarkflow.events.{job}", "allow",
                   pw.js_publish(f"snarkflow.events.{job}", json.dumps({"job_id": job, "body": "partition_proved"}).encode()))
    await c.expect(pw, "object delete partition (marker + purge)", "allow", pw.obj_delete(partition_name))
    if ptask is not None:
        await c.expect(pw, "ack the task", "allow", pw.publish(ptask.reply, b""))
        await c.expect(gw, "  ...task acked: prove-high ack pending 0, stream empty", "allow", _lane_drained(gw, PROVE, "prove-high"))
    # forbidden to the gpu-worker
    await c.expect(pw, "JS publish snarkflow.synth.high", "deny", pw.js_publish("snarkflow.synth.high", b"{}"))
    await c.expect(pw, "JS publish snarkflow.prove.high", "deny", pw.js_publish("snarkflow.prove.high", b"{}"))
    await c.expect(pw, "object put (chunk publish)", "deny", pw.obj_put(f"{job}/rogue", b"rogue"))
    await c.expect(pw, "KV write job record", "deny", pw.kv_write(JOBS, job, b"{}", 0))
    await c.expect(pw, "KV read idempotency key (direct get)", "deny", pw.kv_get(IDEMPOTENCY, "key-1"))
    await c.expect(pw, "STREAM.CREATE.SNARKFLOW_PROVE", "deny",
                   pw.api(f"$JS.API.STREAM.CREATE.{PROVE}", work_stream(PROVE, "snarkflow.prove.>")))
    await c.expect(pw, "create lane consumer prove-high", "deny",
                   pw.api(f"$JS.API.CONSUMER.CREATE.{PROVE}.prove-high.snarkflow.prove.high",
                          {"stream_name": PROVE, "config": lane_consumer_config("prove-high", "snarkflow.prove.high")}))
    await c.expect(pw, "STREAM.PURGE.SNARKFLOW_PROVE", "deny", pw.api(f"$JS.API.STREAM.PURGE.{PROVE}", {}))
    await c.expect(pw, "STREAM.DELETE.OBJ_snarkflow_partitions", "deny", pw.api(f"$JS.API.STREAM.DELETE.{OBJ}"))
    await c.expect(pw, "pull SNARKFLOW_SYNTH synth-high", "deny", pw.pull(SYNTH, "synth-high"))
    await c.expect(pw, "pull SNARKFLOW_EVENTS gateway-ledger", "deny", pw.pull(EVENTS, EVENTS_CONSUMER))
    await c.expect(pw, "subscribe _INBOX_synth.>", "deny", pw.subscribe("_INBOX_synth.>"))
    await c.expect(pw, "subscribe $JS.ACK.> (watch other workers' acks)", "deny", pw.subscribe("$JS.ACK.>"))
    await c.expect(pw, "object delete of a job input (any object: purge is bucket-wide)", "limit",
                   _delete_copy(gw, pw, job))

    # --- gateway: applying events and finishing the job ---------------------------------------
    await c.expect(gw, "events consumer look-up (CONSUMER.INFO gateway-ledger)", "allow",
                   _ack_pending(gw.api(f"$JS.API.CONSUMER.INFO.{EVENTS}.{EVENTS_CONSUMER}", {})))
    for n in (1, 2):
        ev = await c.expect(gw, f"pull event {n} from gateway-ledger", "allow", _some(gw.pull(EVENTS, EVENTS_CONSUMER)))
        if ev is not None:
            await c.expect(gw, f"ack event {n}", "allow", gw.publish(ev.reply, b""))
    await c.expect(gw, "  ...events acked: gateway-ledger ack pending 0", "allow", _lane_drained(gw, EVENTS, EVENTS_CONSUMER))
    fc_before = gw.flow_control_replies
    await c.expect(gw, "object get job input (verify the finished job)", "allow", _size(gw.obj_get(input_name)))
    await c.expect(gw, "  ...flow control answered", "allow", _flow_control(gw, fc_before))
    record["state"] = "done"
    _, cur = await gw.kv_get(JOBS, job)
    await c.expect(gw, "KV update job record to done", "allow", gw.kv_write(JOBS, job, json.dumps(record).encode(), cur or 0))
    await c.expect(gw, "object delete job input (marker + purge)", "allow", gw.obj_delete(input_name))
    await c.expect(gw, "object delete partition of a failed job (already deleted: marker + purge)", "allow",
                   gw.obj_delete(partition_name))

    for role in (gw, sw, pw):
        await role.nc.close()


# small adapters turning results into a short description (or a Failed)
async def _check_value(coro, want):
    value, seq = await coro
    if value != want:
        raise Failed(f"read {value!r}, want {want!r}")
    return f"revision {seq}"


async def _found(coro):
    value, seq = await coro
    if value is None:
        raise Failed("no such key")
    return f"revision {seq}"


async def _size(coro):
    v = await coro
    if isinstance(v, (bytes, bytearray)):
        return f"{len(v)} bytes, digest ok"
    return f"{v['size']} bytes in {v['chunks']} chunks"


async def _keys(coro):
    keys = await coro
    return f"{len(keys)} records"


async def _messages(coro):
    body = await coro
    return f"{body['state']['messages']} messages"


async def _ack_pending(coro):
    body = await coro
    return f"num_ack_pending {body['num_ack_pending']}, num_pending {body['num_pending']}"


async def _some(coro):
    msg = await coro
    if msg is None:
        raise Failed("no message")
    return msg


async def _none(coro):
    msg = await coro
    if msg is not None:
        raise Failed(f"unexpected message on {msg.subject}")
    return None


async def _flow_control(role, before):
    if role.flow_control_replies <= before:
        raise Failed("the server sent no flow-control request; make the object bigger")
    return f"{role.flow_control_replies - before} flow-control replies (last to {role.flow_control_subject})"


async def _lane_drained(gw, stream, consumer):
    await asyncio.sleep(0.2)
    c = await gw.api(f"$JS.API.CONSUMER.INFO.{stream}.{consumer}", {})
    if c["num_ack_pending"] != 0 or c["num_pending"] != 0:
        raise Failed(f"num_ack_pending {c['num_ack_pending']}, num_pending {c['num_pending']}")
    return "ack pending 0"


async def _deliver_subject_probe(gw, sw, job):
    """A synth-worker may create consumers on OBJ_snarkflow_partitions (to read objects), and
    the deliver_subject is in the payload. Show the creation is allowed and that nats-server
    delivered nothing into the job ledger (no non-wildcard subscriber on that subject)."""
    before = (await gw.api(f"$JS.API.STREAM.INFO.KV_{JOBS}"))["state"]["last_seq"]
    cfg = ordered_config(f"$KV.{JOBS}.{job}", f"$O.{PARTITIONS}.C.>")
    await sw.api(f"$JS.API.CONSUMER.CREATE.{OBJ}", {"stream_name": OBJ, "config": cfg})
    await asyncio.sleep(1.5)
    after = (await gw.api(f"$JS.API.STREAM.INFO.KV_{JOBS}"))["state"]["last_seq"]
    if after != before:
        raise Failed(f"KV_snarkflow_jobs grew from seq {before} to {after}: delivered into the ledger")
    return "consumer created (payload not checked), nothing delivered into KV_snarkflow_jobs"


async def _marked(gw, coro, name):
    await coro
    if (await gw.obj_info(name) or {}).get("deleted") is not True:
        raise Failed("object not marked deleted")
    return "the object now reads as deleted (its chunks stay until max_age)"


async def _delete_copy(gw, pw, job):
    name = f"{job}/input-copy"
    await gw.obj_put(name, b"an input the gpu-worker should not need to delete")
    await pw.obj_delete(name)
    if (await gw.obj_info(name) or {}).get("deleted") is not True:
        raise Failed("object not marked deleted")
    return "gpu-worker deleted an object that is not a partition"
