//! The server's one budget of request bytes in flight
//! ([`ServerOptions::max_inflight_bytes`](crate::ServerOptions::max_inflight_bytes)): a
//! semaphore of bytes. A request's body takes its bytes as they arrive (before they are
//! buffered), its decoded input tensors take theirs before they are decoded (from the shape and
//! datatype they declare), and a request gives them back when it is answered. What does not fit
//! is refused at once (503; 413 for what could never fit), never waited for: so the request
//! bytes the server holds are at most the budget, whatever the clients send.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::Semaphore;
use tokio::time::Sleep;

use crate::error::ServeError;

/// The budget: `total` bytes.
pub(crate) struct Budget {
    bytes: Arc<Semaphore>,
    total: usize,
}

impl Budget {
    pub fn new(total: usize) -> Budget {
        let total = total.clamp(1, Semaphore::MAX_PERMITS);
        Budget { bytes: Arc::new(Semaphore::new(total)), total }
    }

    /// An empty reservation, to take bytes into.
    pub fn reservation(&self) -> Arc<Reservation> {
        Arc::new(Reservation {
            bytes: self.bytes.clone(),
            total: self.total,
            held: AtomicUsize::new(0),
            body: AtomicUsize::new(0),
        })
    }

    /// Whether `n` bytes fit now, before any is read: 503 while others hold the budget, 413 if
    /// they never could.
    pub fn check_room(&self, n: usize, what: &str) -> Result<(), ServeError> {
        if n > self.total {
            return Err(ServeError::TooLarge(format!(
                "{what} is {n} bytes, over this server's {} for requests in flight (--max-inflight-mib)",
                self.total
            )));
        }
        if n > self.bytes.available_permits() {
            return Err(ServeError::Unavailable(format!(
                "the server holds its most bytes of requests in flight ({}, --max-inflight-mib): try again later",
                self.total
            )));
        }
        Ok(())
    }

    /// Bytes not taken now.
    #[cfg(test)]
    pub fn available(&self) -> usize {
        self.bytes.available_permits()
    }
}

/// The bytes one request holds of the budget; given back when it is dropped.
pub(crate) struct Reservation {
    bytes: Arc<Semaphore>,
    total: usize,
    held: AtomicUsize,
    /// Of `held`, what the body took as it arrived.
    body: AtomicUsize,
}

impl Reservation {
    /// Takes `n` more bytes, or refuses at once: 503 while other requests hold the budget, 413
    /// for more than the whole budget.
    pub fn take(&self, n: usize, what: &str) -> Result<(), ServeError> {
        if n == 0 {
            return Ok(());
        }
        let held = self.held.load(Ordering::Acquire);
        if n > self.total || held.saturating_add(n) > self.total {
            return Err(ServeError::TooLarge(format!(
                "{what} needs {n} bytes, with {held} its request holds already over this server's {} for requests \
                 in flight (--max-inflight-mib): send less at once",
                self.total
            )));
        }
        let mut left = n;
        let mut taken = 0;
        while left > 0 {
            let chunk = left.min(u32::MAX as usize);
            match self.bytes.try_acquire_many(chunk as u32) {
                Ok(permit) => permit.forget(),
                Err(_) => {
                    self.bytes.add_permits(taken);
                    return Err(ServeError::Unavailable(format!(
                        "the server holds its most bytes of requests in flight ({}, --max-inflight-mib): try again later",
                        self.total
                    )));
                }
            }
            taken += chunk;
            left -= chunk;
        }
        self.held.fetch_add(n, Ordering::AcqRel);
        Ok(())
    }

    /// Gives back what the body took (its bytes are decoded and dropped).
    pub fn release_body(&self) {
        let body = self.body.swap(0, Ordering::AcqRel);
        self.give_back(body);
    }

    fn give_back(&self, n: usize) {
        let n = n.min(self.held.load(Ordering::Acquire));
        self.held.fetch_sub(n, Ordering::AcqRel);
        self.bytes.add_permits(n);
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.bytes.add_permits(*self.held.get_mut());
    }
}

/// `bytes` (a request's body) holding `reservation`: as long as any slice of them lives (an
/// input tensor kept as a slice of the body, on its way to the device), the bytes the request
/// took of the budget stay taken, even past the request's own end (a client gone while its
/// tensors upload).
pub(crate) fn hold(bytes: Bytes, reservation: &Arc<Reservation>) -> Bytes {
    struct Holding {
        bytes: Bytes,
        _reservation: Arc<Reservation>,
    }
    impl AsRef<[u8]> for Holding {
        fn as_ref(&self) -> &[u8] {
            &self.bytes
        }
    }
    Bytes::from_owner(Holding { bytes, _reservation: reservation.clone() })
}

/// A request body that takes its bytes of the budget as they arrive, is cut off past `limit`
/// bytes, and must arrive whole within a timeout: what a client sends is bounded before it is
/// buffered.
pub(crate) struct Budgeted<B> {
    inner: B,
    reservation: Arc<Reservation>,
    limit: usize,
    received: usize,
    deadline: Pin<Box<Sleep>>,
    timeout: Duration,
}

impl<B> Budgeted<B> {
    pub fn new(inner: B, reservation: Arc<Reservation>, limit: usize, timeout: Duration) -> Budgeted<B> {
        Budgeted { inner, reservation, limit, received: 0, deadline: Box::pin(tokio::time::sleep(timeout)), timeout }
    }
}

impl<B> Body for Budgeted<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = &mut *self;
        let frame = match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => frame,
            Poll::Pending => {
                return match this.deadline.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(BodyError::Serve(ServeError::TimedOut(format!(
                        "the request's body did not arrive whole within {:?} (--body-timeout-ms)",
                        this.timeout
                    )))))),
                    Poll::Pending => Poll::Pending,
                }
            }
        };
        let Some(frame) = frame else { return Poll::Ready(None) };
        let frame = match frame {
            Ok(frame) => frame,
            Err(e) => return Poll::Ready(Some(Err(BodyError::Read(e.into())))),
        };
        if let Some(data) = frame.data_ref() {
            this.received += data.len();
            if this.received > this.limit {
                return Poll::Ready(Some(Err(BodyError::Serve(ServeError::TooLarge(format!(
                    "the body is over this server's limit of {} bytes (--max-body-mib)",
                    this.limit
                ))))));
            }
            if let Err(e) = this.reservation.take(data.len(), "the request's body") {
                return Poll::Ready(Some(Err(BodyError::Serve(e))));
            }
            this.reservation.body.fetch_add(data.len(), Ordering::AcqRel);
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Why a budgeted body stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    /// Over the limit, the budget or the time.
    #[error("{0}")]
    Serve(ServeError),
    /// The connection failed.
    #[error("the request's body could not be read: {0}")]
    Read(Box<dyn std::error::Error + Send + Sync>),
}

impl BodyError {
    pub fn into_serve_error(self) -> ServeError {
        match self {
            BodyError::Serve(e) => e,
            BodyError::Read(e) => ServeError::BodyRead(e.into()),
        }
    }
}

/// Reads a budgeted body whole: into one buffer, as it arrives (`declared` bytes when the
/// request says how many).
pub(crate) async fn read_all<B>(body: &mut Budgeted<B>, declared: Option<usize>) -> Result<Vec<u8>, ServeError>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    Ok(read_until(body, declared, None).await?.0)
}

/// Reads a budgeted body into one buffer as it arrives (`declared` bytes when the request says
/// how many), up to `stop` bytes when given: then the rest of the frame that crossed it is
/// returned beside, and the body is left to read.
pub(crate) async fn read_until<B>(
    body: &mut Budgeted<B>,
    declared: Option<usize>,
    stop: Option<usize>,
) -> Result<(Vec<u8>, Bytes), ServeError>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let want = stop.map_or(body.limit, |stop| stop.min(body.limit));
    let mut out = Vec::with_capacity(declared.unwrap_or(0).min(want));
    while stop.is_none_or(|stop| out.len() < stop) {
        let Some(frame) = next_data(body).await? else { break };
        let mut data = &frame[..];
        let mut rest = Bytes::new();
        if let Some(stop) = stop {
            let mine = (stop - out.len()).min(data.len());
            rest = frame.slice(mine..);
            data = &data[..mine];
        }
        // A body of unknown length grows by doubling: its spare capacity is taken of the
        // budget too (the body's own bytes were as they came).
        if out.len() + data.len() > out.capacity() {
            let grown = (out.len() + data.len()).max(out.capacity() * 2).min(want);
            let spare = grown - out.len() - data.len();
            body.reservation.take(spare, "the request's body")?;
            body.reservation.body.fetch_add(spare, Ordering::AcqRel);
            out.reserve_exact(grown - out.len());
        }
        out.extend_from_slice(data);
        if !rest.is_empty() {
            return Ok((out, rest));
        }
    }
    Ok((out, Bytes::new()))
}

/// The next data of a budgeted body (trailers skipped), or `None` at its end.
pub(crate) async fn next_data<B>(body: &mut Budgeted<B>) -> Result<Option<Bytes>, ServeError>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await {
        if let Ok(data) = frame.map_err(BodyError::into_serve_error)?.into_data() {
            return Ok(Some(data));
        }
    }
    Ok(None)
}

/// An answer's body that holds its request's reservation until it has been sent.
pub(crate) struct Held<B> {
    inner: B,
    _reservation: Arc<Reservation>,
}

impl<B> Held<B> {
    pub fn new(inner: B, reservation: Arc<Reservation>) -> Held<B> {
        Held { inner, _reservation: reservation }
    }
}

impl<B: Body + Unpin> Body for Held<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A body of buffers sent one after the other (a response's JSON, then its outputs' bytes as
/// they were downloaded: not copied into one buffer).
pub(crate) struct Chunks(VecDeque<Bytes>);

impl Chunks {
    pub fn new(parts: Vec<Vec<u8>>) -> Chunks {
        Chunks(parts.into_iter().filter(|p| !p.is_empty()).map(Bytes::from).collect())
    }
}

impl Body for Chunks {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Poll::Ready(self.0.pop_front().map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.0.iter().map(|b| b.len() as u64).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_take_and_give_back_the_budget() {
        let budget = Budget::new(100);
        let a = budget.reservation();
        a.take(60, "a").unwrap();
        let b = budget.reservation();
        assert!(matches!(b.take(50, "b"), Err(ServeError::Unavailable(_))));
        assert!(matches!(b.take(101, "b"), Err(ServeError::TooLarge(_))));
        b.take(40, "b").unwrap();
        assert_eq!(budget.available(), 0);
        a.body.store(10, Ordering::Release);
        a.release_body();
        assert_eq!(budget.available(), 10);
        drop(a);
        assert_eq!(budget.available(), 60);
        drop(b);
        assert_eq!(budget.available(), 100);
    }

    /// A body's bytes kept as slices (input tensors on their way to the device) keep its
    /// request's bytes taken of the budget until the last slice is dropped, even once the
    /// request itself let go.
    #[test]
    fn held_bodies_keep_their_bytes_taken_while_a_slice_lives() {
        let budget = Budget::new(100);
        let reservation = budget.reservation();
        reservation.take(30, "the body").unwrap();
        let body = hold(Bytes::from(vec![7u8; 30]), &reservation);
        let tensor = body.slice(10..20);
        drop((body, reservation));
        assert_eq!(budget.available(), 70);
        assert_eq!(tensor[..], [7; 10]);
        drop(tensor);
        assert_eq!(budget.available(), 100);
    }
}
