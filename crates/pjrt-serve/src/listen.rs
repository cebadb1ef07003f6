//! The accept loop of the HTTP and gRPC ports (hyper's connection builders, over TLS or not):
//! what no client can hold for long. A connection waits for a free place under
//! [`ServerOptions::max_connections`](crate::ServerOptions::max_connections) (one count for both
//! ports) before it is accepted; its first request's head (or HTTP/2 preface) must be there
//! within [`ServerOptions::header_timeout`](crate::ServerOptions::header_timeout), as must each
//! later HTTP/1 request's head; an answer the client leaves unread for
//! [`ServerOptions::body_timeout`](crate::ServerOptions::body_timeout) closes the connection.
//! HTTP/2 has bounded streams, header lists and flow-control windows, and pings to find dead
//! peers.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::time::Sleep;

/// HTTP/1's read buffer: a request head must fit (431 beyond).
pub(crate) const HTTP1_BUFFER: usize = 64 << 10;
/// HTTP/2 streams at once per connection.
pub(crate) const HTTP2_STREAMS: u32 = 32;
/// HTTP/2 header list bound per stream.
pub(crate) const HTTP2_HEADER_LIST: u32 = 16 << 10;
/// HTTP/2 flow-control windows: what a peer may send that the server has not read yet.
pub(crate) const HTTP2_CONNECTION_WINDOW: u32 = 1 << 20;
pub(crate) const HTTP2_STREAM_WINDOW: u32 = 256 << 10;

/// How one port serves.
pub(crate) struct Port {
    /// The connection count shared by the server's ports.
    pub connections: Arc<Semaphore>,
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    /// HTTP/2 only (gRPC), else HTTP/1.1 and HTTP/2 (by the preface).
    pub http2_only: bool,
    #[cfg(feature = "tls")]
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// Serves `service` on `listener` until `shutdown` completes, then lets the connections finish
/// the requests in flight.
pub(crate) async fn serve<S, B>(
    listener: TcpListener,
    service: S,
    port: Port,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()>
where
    S: tower_service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(port.header_timeout).max_buf_size(HTTP1_BUFFER);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(HTTP2_STREAMS)
        .max_header_list_size(HTTP2_HEADER_LIST)
        .initial_connection_window_size(HTTP2_CONNECTION_WINDOW)
        .initial_stream_window_size(HTTP2_STREAM_WINDOW)
        .keep_alive_interval(Duration::from_secs(30))
        .keep_alive_timeout(Duration::from_secs(10));
    if port.http2_only {
        builder = builder.http2_only();
    }
    #[cfg(feature = "tls")]
    let acceptor = port.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // A place first: past the bound, connections wait in the listen backlog.
        let place = tokio::select! {
            place = port.connections.clone().acquire_owned() => place,
            _ = &mut shutdown => break,
        };
        let Ok(place) = place else { break };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut shutdown => break,
        };
        let Ok((tcp, _)) = accepted else {
            // Out of file descriptors, say: wait a little rather than spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let seen = Arc::new(AtomicBool::new(false));
        let service =
            hyper_util::service::TowerToHyperService::new(FirstRequest { inner: service.clone(), seen: seen.clone() });
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let (header_timeout, body_timeout) = (port.header_timeout, port.body_timeout);
        #[cfg(feature = "tls")]
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let _place = place;
            let deadline = tokio::time::sleep(header_timeout);
            #[cfg(feature = "tls")]
            if let Some(acceptor) = acceptor {
                let Ok(Ok(stream)) = tokio::time::timeout(header_timeout, acceptor.accept(tcp)).await else { return };
                let io = TokioIo::new(WriteStall::new(stream, body_timeout));
                let connection = watcher.watch(builder.serve_connection(io, service).into_owned());
                return until_first_request(connection, deadline, &seen).await;
            }
            let io = TokioIo::new(WriteStall::new(tcp, body_timeout));
            let connection = watcher.watch(builder.serve_connection(io, service).into_owned());
            until_first_request(connection, deadline, &seen).await
        });
    }
    graceful.shutdown().await;
    Ok(())
}

/// Runs `connection`, dropping it at `deadline` if no request has come by then (a head or an
/// HTTP/2 preface cut short, or nothing at all).
async fn until_first_request<T>(connection: impl Future<Output = T>, deadline: Sleep, seen: &AtomicBool) {
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        _ = &mut connection => return,
        _ = deadline => {}
    }
    if seen.load(Ordering::Acquire) {
        connection.await;
    }
}

/// A service that notes its first request.
#[derive(Clone)]
struct FirstRequest<S> {
    inner: S,
    seen: Arc<AtomicBool>,
}

impl<S, R> tower_service::Service<R> for FirstRequest<S>
where
    S: tower_service::Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> S::Future {
        self.seen.store(true, Ordering::Release);
        self.inner.call(request)
    }
}

/// A stream whose writes fail once they have waited `timeout` without progress: a client that
/// reads nothing of its answer does not hold the connection (and the answer) forever.
struct WriteStall<T> {
    inner: T,
    timeout: Duration,
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<T> WriteStall<T> {
    fn new(inner: T, timeout: Duration) -> WriteStall<T> {
        WriteStall { inner, timeout, stalled: None }
    }

    /// `poll` went on with `result`: pending starts (or goes on with) the stall clock, anything
    /// else stops it.
    fn watch<R>(&mut self, cx: &mut Context<'_>, result: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        if result.is_ready() {
            self.stalled = None;
            return result;
        }
        let timeout = self.timeout;
        let stalled = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client read nothing of the answer for the body timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteStall<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteStall<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, result)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, result)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, result)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watch(cx, result)
    }
}
