"""One connection per role, performing the NATS operations the Rust code performs on the exact
subjects async-nats 0.42 uses, and what each outcome is (allowed, Denied, Failed)."""

import asyncio
import base64
import hashlib
import json
import time
import uuid

import nats
from nats.errors import TimeoutError as NatsTimeout

from .topology import (
    CHUNK_SIZE, DEAD, DEAD_CONSUMER, EVENTS, EVENTS_CONSUMER, IDEMPOTENCY, JOBS, OBJ, OBJ_STREAM,
    PARTITIONS, PROVE, SYNTH, ACK_WAIT, consumer_create_subject, encode_object_name, kv_stream,
    lane, lane_consumer_config, lane_consumers, ordered_config, work_stream,
)


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
