//! What a gRPC call meets before its message is read.
//!
//! - **Who it is**, from its metadata, which arrives before the message: a token in
//!   `authorization` is checked, a call without one is the listener's tenant or, with
//!   `--grpc-require-token`, refused UNAUTHENTICATED at once. A refused call's message is never
//!   read, so it costs no buffer and no slot. The caller travels in the request's extensions to
//!   the service, which does not look at the token again.
//! - **Room for its message**: every message being read takes its declared size (the 4-byte
//!   length after gRPC's flag byte, rounded up to whole MiB, at least one) from a budget of
//!   bytes the listener shares (`--grpc-max-body-memory`), and one caller takes at most half of
//!   it; the room is given back as soon as the body has been read. So a `Prove` that waits out
//!   its job holds nothing here, and no one caller, stalling uploads, can hold the room another
//!   needs. A message larger than `--grpc-max-message-bytes` is refused from its first bytes.
//! - **A deadline for its body**: a body not read whole within `--grpc-body-timeout-secs` of the
//!   call's start is refused (DEADLINE_EXCEEDED) and its room given back.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::{Buf as _, Bytes, BytesMut};
use http_body::{Body as _, Frame};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::body::Body;
use tonic::codegen::http;
use tonic::Status;

use crate::auth::{Auth, Caller};
use crate::ApiError;

const MIB: u64 = 1 << 20;

/// The door's settings and its shared budget.
pub(super) struct Door {
    auth: Auth,
    /// Who a call without a token is; `None` when a token is required.
    default_caller: Option<Caller>,
    max_message_bytes: usize,
    body_timeout: Duration,
    /// The budget, in MiB.
    budget: Arc<Semaphore>,
    /// What one caller may hold of it, in MiB.
    per_caller_mib: u32,
    /// Each caller's share, by token id (the listener's tenant is one caller).
    callers: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl Door {
    pub(super) fn new(
        auth: Auth,
        default_caller: Option<Caller>,
        max_message_bytes: usize,
        max_body_memory: u64,
        body_timeout: Duration,
    ) -> Door {
        let budget_mib = u32::try_from((max_body_memory / MIB).max(2)).unwrap_or(u32::MAX >> 4);
        Door {
            auth,
            default_caller,
            max_message_bytes,
            body_timeout,
            budget: Arc::new(Semaphore::new(budget_mib as usize)),
            per_caller_mib: (budget_mib / 2).max(1),
            callers: Mutex::default(),
        }
    }

    /// Who makes a call with these headers.
    fn caller(&self, headers: &http::HeaderMap) -> Result<Caller, ApiError> {
        match headers.get(http::header::AUTHORIZATION) {
            Some(value) => {
                let value = value
                    .to_str()
                    .map_err(|_| ApiError::Unauthorized("the authorization metadata is not text".into()))?;
                Ok(Caller(self.auth.authenticate(Some(value))?))
            }
            None => self.default_caller.clone().ok_or_else(|| {
                ApiError::Unauthorized(
                    "this listener requires a token: send `authorization: Bearer <token>` metadata".into(),
                )
            }),
        }
    }

    fn share(&self, caller: &Caller) -> Arc<Semaphore> {
        let mut callers = self.callers.lock().expect("never poisoned");
        // a caller holding nothing is forgotten, so the map holds only callers reading now
        callers.retain(|_, share| share.available_permits() < self.per_caller_mib as usize);
        callers
            .entry(caller.0.token_id.clone())
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_caller_mib as usize)))
            .clone()
    }

    /// Room for a message of `bytes` for `caller`: its share first, then the budget.
    async fn room(self: Arc<Self>, share: Arc<Semaphore>, bytes: u64) -> Result<Room, Status> {
        let mib = u32::try_from(bytes.div_ceil(MIB).max(1)).unwrap_or(u32::MAX);
        if mib > self.per_caller_mib {
            return Err(Status::resource_exhausted(format!(
                "a {bytes}-byte message is more than one caller may have read at once ({} MiB, half of --grpc-max-body-memory)",
                self.per_caller_mib
            )));
        }
        let closed = |_| Status::unavailable("the gateway is stopping");
        let own = share.acquire_many_owned(mib).await.map_err(closed)?;
        let shared = self.budget.clone().acquire_many_owned(mib).await.map_err(closed)?;
        Ok(Room { _own: own, _shared: shared })
    }
}

/// Room held for one message while it is read.
struct Room {
    _own: OwnedSemaphorePermit,
    _shared: OwnedSemaphorePermit,
}

/// The door as a tower layer in front of the gRPC services.
#[derive(Clone)]
pub(super) struct DoorLayer(pub(super) Arc<Door>);

impl<S> tower::Layer<S> for DoorLayer {
    type Service = DoorService<S>;

    fn layer(&self, inner: S) -> DoorService<S> {
        DoorService { inner, door: self.0.clone() }
    }
}

#[derive(Clone)]
pub(super) struct DoorService<S> {
    inner: S,
    door: Arc<Door>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S> tower::Service<http::Request<Body>> for DoorService<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<http::Response<Body>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let caller = match self.door.caller(request.headers()) {
            Ok(caller) => caller,
            Err(refused) => {
                let status: Status = refused.into();
                return Box::pin(std::future::ready(Ok(status.into_http())));
            }
        };
        let (mut parts, body) = request.into_parts();
        let share = self.door.share(&caller);
        parts.extensions.insert(caller);
        let metered = Metered {
            inner: body,
            door: self.door.clone(),
            share,
            deadline: Box::pin(tokio::time::sleep(self.door.body_timeout)),
            state: State::Header(BytesMut::new()),
        };
        let request = http::Request::from_parts(parts, Body::new(metered));
        // the clone that was made ready is the one called (tower's rule for Clone services)
        let clone = self.inner.clone();
        let mut ready = std::mem::replace(&mut self.inner, clone);
        Box::pin(ready.call(request))
    }
}

/// A request body that takes room for its message before handing it on.
struct Metered {
    inner: Body,
    door: Arc<Door>,
    share: Arc<Semaphore>,
    deadline: Pin<Box<tokio::time::Sleep>>,
    state: State,
}

enum State {
    /// Reading gRPC's 5-byte message header (held back until there is room).
    Header(BytesMut),
    /// Waiting for room, holding what was read.
    Waiting(BoxFuture<Result<Room, Status>>, Bytes),
    /// Room taken: frames pass, `left` more bytes of the message expected.
    Reading { _room: Room, left: u64 },
    /// The message is read and its room given back: trailers may follow, data may not.
    Read,
    /// Refused: nothing more is read.
    Refused,
}

fn declared(head: &[u8]) -> u64 {
    u64::from(u32::from_be_bytes([head[1], head[2], head[3], head[4]]))
}

type Polled = Poll<Option<Result<Frame<Bytes>, Status>>>;

const MORE_THAN_ONE: &str = "the request carries more than the one message it declared";

impl Metered {
    fn refuse(&mut self, status: Status) -> Polled {
        self.state = State::Refused;
        Poll::Ready(Some(Err(status)))
    }

    /// The body ended: nothing more to read.
    fn ended(&mut self) -> Polled {
        self.state = State::Read;
        Poll::Ready(None)
    }

    /// Refused if the body is still being read past its deadline.
    fn past_deadline(&mut self, cx: &mut Context<'_>) -> Option<Polled> {
        let reading = matches!(self.state, State::Header(_) | State::Waiting(..) | State::Reading { .. });
        if !reading || self.deadline.as_mut().poll(cx).is_pending() {
            return None;
        }
        let secs = self.door.body_timeout.as_secs();
        Some(self.refuse(Status::deadline_exceeded(format!(
            "the request was not read whole within {secs} s (--grpc-body-timeout-secs)"
        ))))
    }

    /// Reading the 5-byte header: `None` while more is needed or once room is being waited for.
    fn poll_header(&mut self, cx: &mut Context<'_>) -> Option<Polled> {
        let frame = match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Pending => return Some(Poll::Pending),
            Poll::Ready(Some(Ok(frame))) => frame,
            Poll::Ready(Some(Err(e))) => return Some(Poll::Ready(Some(Err(e)))),
            Poll::Ready(None) => return Some(self.ended()),
        };
        let State::Header(head) = &mut self.state else { return None };
        let Ok(data) = frame.into_data() else { return None };
        head.extend_from_slice(&data);
        if head.len() < 5 {
            return None;
        }
        let (declared, read) = (declared(head), head.len() as u64);
        let max = self.door.max_message_bytes;
        if declared > max as u64 {
            return Some(self.refuse(Status::resource_exhausted(format!(
                "a {declared}-byte message is over the {max}-byte limit (--grpc-max-message-bytes)"
            ))));
        }
        if read > declared + 5 {
            return Some(self.refuse(Status::invalid_argument(MORE_THAN_ONE)));
        }
        let State::Header(head) = &mut self.state else { return None };
        let read = std::mem::take(head).freeze();
        let room = self.door.clone().room(self.share.clone(), declared + 5);
        self.state = State::Waiting(Box::pin(room), read);
        None
    }

    /// Waiting for room: once taken, what was read is handed on.
    fn poll_waiting(&mut self, cx: &mut Context<'_>) -> Polled {
        let State::Waiting(room, read) = &mut self.state else { return Poll::Ready(None) };
        let room = ready!(room.as_mut().poll(cx));
        let read = std::mem::take(read);
        let room = match room {
            Ok(room) => room,
            Err(refused) => return self.refuse(refused),
        };
        let left = (declared(&read) + 5).saturating_sub(read.len() as u64);
        self.state = if left == 0 { State::Read } else { State::Reading { _room: room, left } };
        Poll::Ready(Some(Ok(Frame::data(read))))
    }

    /// The rest of the message passes, never more than it declared.
    fn poll_reading(&mut self, cx: &mut Context<'_>) -> Polled {
        let frame = match ready!(Pin::new(&mut self.inner).poll_frame(cx)) {
            Some(Ok(frame)) => frame,
            Some(Err(e)) => return Poll::Ready(Some(Err(e))),
            None => return self.ended(),
        };
        let State::Reading { left, .. } = &mut self.state else { return Poll::Ready(None) };
        let bytes = frame.data_ref().map_or(0, |d| d.remaining() as u64);
        // a unary call carries one message: more than it declared is refused
        if bytes > *left {
            return self.refuse(Status::invalid_argument(MORE_THAN_ONE));
        }
        *left -= bytes;
        if *left == 0 {
            // all of it read: the room goes back before the call is handled
            self.state = State::Read;
        }
        Poll::Ready(Some(Ok(frame)))
    }

    /// After the message: trailers may follow, data may not.
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Polled {
        match ready!(Pin::new(&mut self.inner).poll_frame(cx)) {
            Some(Ok(frame)) if frame.data_ref().is_some_and(|d| d.has_remaining()) => {
                self.refuse(Status::invalid_argument(MORE_THAN_ONE))
            }
            other => Poll::Ready(other),
        }
    }
}

impl http_body::Body for Metered {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        let this = &mut *self;
        if let Some(expired) = this.past_deadline(cx) {
            return expired;
        }
        loop {
            match this.state {
                State::Header(_) => {
                    if let Some(polled) = this.poll_header(cx) {
                        return polled;
                    }
                }
                State::Waiting(..) => return this.poll_waiting(cx),
                State::Reading { .. } => return this.poll_reading(cx),
                State::Read => return this.poll_read(cx),
                State::Refused => return Poll::Ready(None),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self.state {
            State::Refused => true,
            State::Read => self.inner.is_end_stream(),
            _ => false,
        }
    }
}
