#!/usr/bin/env python3
"""Check snarkflow's NATS permissions (deploy/nats/permissions.conf) against a real nats-server.

How to run (needs nats-server on PATH, bash, coreutils and the nats-py client):

    python3 -m venv /tmp/nats-venv && /tmp/nats-venv/bin/pip install nats-py
    /tmp/nats-venv/bin/python deploy/nats/check-permissions.py [--nats-server PATH] [-v]

What it does: copies deploy/nats/nats.conf and permissions.conf to a temporary directory,
generates fresh credentials there with deploy/scripts/nats-credentials.sh, and starts
`nats-server -c nats.conf` on a free loopback port with a temporary JetStream store. Then, as
each role (user gateway / synth-worker / gpu-worker, with the inbox prefix the services use:
_INBOX_gateway / _INBOX_synth / _INBOX_gpu), it performs the NATS operations the Rust code
performs, on the exact subjects async-nats 0.42 uses (crates/bus: Bus::connect's get-or-create,
pulls and acks, JetStream publishes, KV create/update/direct get/list, object store
info/put/get/delete), and checks that each allowed operation works and each forbidden one is
refused with a permissions violation. Lines marked LIMIT are operations subject permissions
cannot restrict (see permissions.conf); they are checked to behave as documented.

Exit status: 0 when every check passed, 1 on any mismatch, 2 when the setup failed.
"""

import argparse
import asyncio
import base64
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

try:
    import nats
    from nats.errors import TimeoutError as NatsTimeout
except ImportError:  # pragma: no cover
    sys.exit("nats-py is missing: python3 -m venv /tmp/nats-venv && /tmp/nats-venv/bin/pip install nats-py")

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CREDENTIALS_SCRIPT = REPO / "deploy" / "scripts" / "nats-credentials.sh"

# --- the topology, as crates/wire/src/topology.rs and crates/bus/src/connect.rs and lanes.rs declare it ---
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


# --- outcomes ---------------------------------------------------------------------------------


class Denied(Exception):
    """The server refused an operation with a permissions violation."""

    def __init__(self, what):
        super().__init__(what)
        self.what = what


class Failed(Exception):
    """An operation failed for a reason other than permissions."""


class Results:
    def __init__(self, verbose):
        self.rows = []
        self.verbose = verbose

    def add(self, role, operation, expected, actual, ok, detail=""):
        self.rows.append((role, operation, expected, actual, ok, detail))
        mark = "PASS" if ok else "FAIL"
        line = f"{mark}  {role:<12} {expected:<7} {operation}"
        if not ok or (detail and self.verbose):
            line += f"\n        -> got {actual}{': ' + detail if detail else ''}"
        print(line, flush=True)

    @property
    def failures(self):
        return [r for r in self.rows if not r[4]]


# --- one connection per role ------------------------------------------------------------------


class Role:
    def __init__(self, name, user, password, inbox_prefix):
        self.name, self.user, self.password, self.inbox_prefix = name, user, password, inbox_prefix
        self.errors = []
        self.nc = None
        self.flow_control_replies = 0
        self.flow_control_subject = None

    async def connect(self, url):
        async def on_error(e):
            self.errors.append(str(e))

        self.nc = await nats.connect(
            url,
            user=self.user,
            password=self.password,
            inbox_prefix=self.inbox_prefix,
            error_cb=on_error,
            allow_reconnect=False,
            name=f"check-permissions-{self.name}",
        )

    async def sync(self, timeout=3):
        """Return once the server has handled everything sent so far, and so reported any
        violation. nats-py writes PING straight to the socket while PUB/SUB wait for its
        flusher task, so one flush can overtake them; the second PING is sent after the first
        PONG, by when the flusher has written them."""
        await self.nc.flush(timeout=timeout)
        await self.nc.flush(timeout=timeout)

    def _violation(self, since, subject):
        wanted = f'"{subject.lower()}"'
        for e in self.errors[since:]:
            if "permissions violation" in e and wanted in e:
                return e
        return None

    async def request(self, subject, payload=b"", headers=None, timeout=3.0):
        """A request; Denied as soon as the server reports a violation for `subject`."""
        if isinstance(payload, (dict, list)):
            payload = json.dumps(payload).encode()
        since = len(self.errors)
        task = asyncio.ensure_future(self.nc.request(subject, payload, timeout=timeout, headers=headers))
        await asyncio.sleep(0)  # let the request send its PUB
        try:
            await self.sync(timeout)
        except Exception:
            pass
        # the server answers PING after handling the PUB: a violation is known by now
        violation = self._violation(since, subject)
        if violation:
            task.cancel()
            try:
                await task
            except BaseException:
                pass
            raise Denied(subject)
        try:
            msg = await task
        except NatsTimeout:
            violation = self._violation(since, subject)
            if violation:
                raise Denied(subject)
            raise Failed(f"no reply from {subject}")
        return msg

    async def api(self, subject, payload=b"", ok_codes=(), timeout=3.0):
        """A JetStream API request; returns the JSON response; Failed on an API error unless its
        code is in ok_codes."""
        msg = await self.request(subject, payload, timeout=timeout)
        body = json.loads(msg.data or b"{}")
        err = body.get("error")
        if err and err.get("code") not in ok_codes:
            raise Failed(f"{subject}: {err}")
        return body

    async def js_publish(self, subject, data, headers=None):
        """A JetStream publish: a request answered by the stream with a PubAck."""
        msg = await self.request(subject, data, headers=headers)
        body = json.loads(msg.data or b"{}")
        if "error" in body:
            raise Failed(f"publish to {subject}: {body['error']}")
        return body

    async def publish(self, subject, data=b"", headers=None):
        """A plain publish (acks, flow-control replies); Denied on a violation."""
        since = len(self.errors)
        await self.nc.publish(subject, data, headers=headers)
        await self.sync()
        if self._violation(since, subject):
            raise Denied(subject)

    async def subscribe(self, subject):
        since = len(self.errors)
        sub = await self.nc.subscribe(subject)
        await self.sync()
        if self._violation(since, subject):
            await sub.unsubscribe()
            raise Denied(f"subscribe {subject}")
        return sub

    # -- Bus::connect ------------------------------------------------------------------------

    async def get_or_create_stream(self, config, create):
        info = await self.api(f"$JS.API.STREAM.INFO.{config['name']}", ok_codes=(404,))
        if "error" not in info:
            return "found"
        if not create:
            raise Failed(f"stream {config['name']} does not exist")
        await self.api(f"$JS.API.STREAM.CREATE.{config['name']}", config)
        return "created"

    async def get_or_create_consumer(self, stream, name, config, create):
        info = await self.api(f"$JS.API.CONSUMER.INFO.{stream}.{name}", {}, ok_codes=(404,))
        if "error" not in info:
            return "found"
        if not create:
            raise Failed(f"consumer {stream}.{name} does not exist")
        await self.api(consumer_create_subject(stream, config), {"stream_name": stream, "config": config})
        return "created"

    async def declare(self, create):
        """Bus::declare: every stream, consumer and bucket, in the Rust code's order."""
        done = []
        for stage in (SYNTH, PROVE):
            done.append(await self.get_or_create_stream(work_stream(stage, f"snarkflow.{lane(stage)}.>"), create))
            for name, filt in lane_consumers(stage):
                done.append(
                    await self.get_or_create_consumer(stage, name, lane_consumer_config(name, filt), create)
                )
        done.append(await self.get_or_create_stream(work_stream(EVENTS, "snarkflow.events.>"), create))
        events_config = {
            "durable_name": EVENTS_CONSUMER,
            "ack_policy": "explicit",
            "ack_wait": ACK_WAIT,
            "deliver_policy": "all",
            "replay_policy": "instant",
        }
        done.append(await self.get_or_create_consumer(EVENTS, EVENTS_CONSUMER, events_config, create))
        dead_subjects = [f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{s}.*" for s in (SYNTH, PROVE)]
        done.append(await self.get_or_create_stream(work_stream(DEAD, dead_subjects), create))
        dead_config = dict(events_config, durable_name=DEAD_CONSUMER)
        done.append(await self.get_or_create_consumer(DEAD, DEAD_CONSUMER, dead_config, create))
        for bucket in (JOBS, IDEMPOTENCY):
            done.append(await self.get_or_create_stream(kv_stream(bucket), create))
        done.append(await self.get_or_create_stream(OBJ_STREAM, create))
        return f"{done.count('created')} created, {done.count('found')} found"

    # -- pulling work ------------------------------------------------------------------------

    async def pull(self, stream, consumer):
        """One no-wait pull (Lanes::next's fetch of one message); the message or None. Like
        async-nats, on a fresh inbox of its own: a delivered message carries its stream subject,
        not the inbox, so a request/reply helper would not match it."""
        subject = f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}"
        inbox = self.nc.new_inbox()
        sub = await self.subscribe(inbox)
        try:
            since = len(self.errors)
            await self.nc.publish(subject, json.dumps({"batch": 1, "no_wait": True}).encode(), reply=inbox)
            await self.sync()
            if self._violation(since, subject):
                raise Denied(subject)
            try:
                msg = await sub.next_msg(timeout=3)
            except NatsTimeout:
                if self._violation(since, subject):
                    raise Denied(subject)
                raise Failed(f"no answer to {subject}")
        finally:
            await sub.unsubscribe()
        status = (msg.headers or {}).get("Status")
        if status:
            if status in ("404", "408"):
                return None
            raise Failed(f"pull status {status} {(msg.headers or {}).get('Description')}")
        return msg

    # -- KV ----------------------------------------------------------------------------------

    async def kv_write(self, bucket, key, value, revision):
        """Store::create (revision 0) / Store::update: a publish expecting the key's last revision."""
        ack = await self.js_publish(
            f"$KV.{bucket}.{key}", value, headers={"Nats-Expected-Last-Subject-Sequence": str(revision)}
        )
        return ack["seq"]

    async def kv_get(self, bucket, key):
        """Store::entry on a bucket with allow_direct: direct get of the key's last message."""
        msg = await self.request(f"$JS.API.DIRECT.GET.KV_{bucket}.$KV.{bucket}.{key}")
        headers = msg.headers or {}
        if headers.get("Status") == "404":
            return None, None
        if headers.get("Status"):
            raise Failed(f"direct get status {headers.get('Status')}")
        return msg.data, int(headers["Nats-Sequence"])

    async def ordered_read(self, stream, filter_subject, deliver_policy, expected, description=None):
        """An ordered push consumer (KV listing, object read): its messages, answering flow control."""
        deliver = self.nc.new_inbox()
        sub = await self.subscribe(deliver)
        try:
            config = ordered_config(deliver, filter_subject, deliver_policy, description)
            await self.api(consumer_create_subject(stream, config), {"stream_name": stream, "config": config})
            got = []
            deadline = time.monotonic() + 20
            while len(got) < expected:
                if time.monotonic() > deadline:
                    raise Failed(f"ordered consumer delivered {len(got)} of {expected} messages")
                try:
                    msg = await sub.next_msg(timeout=2)
                except NatsTimeout:
                    continue
                if (msg.headers or {}).get("Status") == "100":
                    if msg.reply:  # a flow-control request (an idle heartbeat has no reply)
                        await self.publish(msg.reply)
                        self.flow_control_replies += 1
                        self.flow_control_subject = msg.reply
                    continue
                got.append(msg)
            return got
        finally:
            await sub.unsubscribe()

    async def kv_list(self, bucket):
        """Ledger::list: stream info, then an ordered consumer delivering the last value per key."""
        info = await self.api(f"$JS.API.STREAM.INFO.KV_{bucket}")
        keys = info["state"].get("num_subjects") or info["state"]["messages"]
        msgs = await self.ordered_read(
            f"KV_{bucket}", f"$KV.{bucket}.>", "last_per_subject", keys, "kv watch consumer"
        )
        return {m.subject[len(f"$KV.{bucket}.") :]: m.data for m in msgs}

    # -- object store ------------------------------------------------------------------------

    async def obj_info(self, name):
        body = await self.api(
            f"$JS.API.STREAM.MSG.GET.{OBJ}",
            {"last_by_subj": f"$O.{PARTITIONS}.M.{encode_object_name(name)}"},
            ok_codes=(404,),
        )
        if "error" in body:
            return None
        return json.loads(base64.b64decode(body["message"]["data"]))

    async def obj_put(self, name, data):
        """ObjectStore::put: info, chunks, metadata (rollup), purge of an existing object's chunks."""
        existing = await self.obj_info(name)
        nuid = uuid.uuid4().hex
        chunk_subject = f"$O.{PARTITIONS}.C.{nuid}"
        chunks = 0
        for i in range(0, len(data), CHUNK_SIZE):
            await self.js_publish(chunk_subject, data[i : i + CHUNK_SIZE])
            chunks += 1
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode()
        meta = {
            "name": name,
            "bucket": PARTITIONS,
            "nuid": nuid,
            "chunks": chunks,
            "size": len(data),
            "digest": f"SHA-256={digest}",
            "options": {"max_chunk_size": CHUNK_SIZE},
            "deleted": False,
        }
        await self.js_publish(
            f"$O.{PARTITIONS}.M.{encode_object_name(name)}",
            json.dumps(meta).encode(),
            headers={"Nats-Rollup": "sub"},
        )
        if existing:
            await self.api(f"$JS.API.STREAM.PURGE.{OBJ}", {"filter": f"$O.{PARTITIONS}.C.{existing['nuid']}"})
        return meta

    async def obj_get(self, name):
        """ObjectStore::get + read: info, then an ordered consumer on the object's chunks."""
        info = await self.obj_info(name)
        if info is None or info.get("deleted"):
            raise Failed(f"object {name} not found")
        msgs = await self.ordered_read(OBJ, f"$O.{PARTITIONS}.C.{info['nuid']}", "all", info["chunks"])
        data = b"".join(m.data for m in msgs)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode()
        if f"SHA-256={digest}" != info["digest"] or len(data) != info["size"]:
            raise Failed(f"object {name}: digest or size mismatch")
        return data

    async def obj_delete_marker(self, name):
        """First half of ObjectStore::delete: info, then a deleted-marker metadata (rollup)."""
        info = await self.obj_info(name)
        if info is None:
            raise Failed(f"object {name} not found")
        marker = dict(info, chunks=0, size=0, deleted=True)
        await self.js_publish(
            f"$O.{PARTITIONS}.M.{encode_object_name(name)}",
            json.dumps(marker).encode(),
            headers={"Nats-Rollup": "sub"},
        )
        return info

    async def obj_purge_chunks(self, info):
        """Second half of ObjectStore::delete (and the end of a put over an existing name)."""
        await self.api(f"$JS.API.STREAM.PURGE.{OBJ}", {"filter": f"$O.{PARTITIONS}.C.{info['nuid']}"})

    async def obj_delete(self, name):
        await self.obj_purge_chunks(await self.obj_delete_marker(name))


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


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def wait_for_port(port, proc, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nats-server exited with {proc.returncode}")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.1)
    raise RuntimeError("nats-server did not start listening")


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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nats-server", default=shutil.which("nats-server") or "nats-server")
    parser.add_argument("-v", "--verbose", action="store_true", help="show details of passing checks too")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (config, log)")
    parser.add_argument("--conf-dir", type=Path, default=HERE,
                        help="directory holding the nats.conf and permissions.conf to check (default: this one)")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="snarkflow-nats-check-"))
    proc = None
    try:
        for name in ("nats.conf", "permissions.conf"):
            shutil.copy(args.conf_dir / name, tmp / name)
        subprocess.run(["bash", str(CREDENTIALS_SCRIPT), str(tmp)], check=True, stdout=subprocess.DEVNULL)
        passwords = {u: (tmp / f"{u}.password").read_text().strip() for u in ("gateway", "synth-worker", "gpu-worker")}
        test = subprocess.run([args.nats_server, "-t", "-c", str(tmp / "nats.conf")], capture_output=True, text=True)
        if test.returncode != 0:
            print(f"nats-server rejects the configuration:\n{test.stdout}{test.stderr}", file=sys.stderr)
            return 2
        version = subprocess.run([args.nats_server, "--version"], capture_output=True, text=True).stdout.strip()
        port = free_port()
        log = open(tmp / "nats-server.log", "w")
        proc = subprocess.Popen(
            # the store is nats.conf's relative store_dir, under the temporary working directory
            [args.nats_server, "-c", str(tmp / "nats.conf"), "-a", "127.0.0.1", "-p", str(port)],
            stdout=log, stderr=subprocess.STDOUT, cwd=tmp,
        )
        print(f"{version} on 127.0.0.1:{port}, config {tmp / 'nats.conf'}", flush=True)
        asyncio.run(wait_for_port(port, proc))
        results = Results(args.verbose)
        asyncio.run(run_checks(f"nats://127.0.0.1:{port}", passwords, results))
        total, failed = len(results.rows), results.failures
        limits = sum(1 for r in results.rows if r[2] == "LIMIT")
        print(f"\n{total - len(failed)}/{total} checks passed ({limits} LIMIT: allowed by design, see permissions.conf)")
        if failed:
            print("mismatches:")
            for role, op, expected, actual, _, detail in failed:
                print(f"  {role}: {op}: expected {expected}, got {actual} {detail}")
            return 1
        return 0
    except Exception as e:  # noqa: BLE001
        print(f"setup failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
