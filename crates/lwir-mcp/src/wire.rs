//! What the transports know about a connection beyond rmcp's view of it: how large each
//! pending request's answer may be, which answers were refused here (too large, unreadable)
//! and why the connection stopped, and how many `notifications/tools/list_changed` have
//! been read — counted in the order messages arrive, so that a request answered after one
//! is known to have been answered after it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use rmcp::RoleClient;
use rmcp::model::{
    ErrorCode, ErrorData, JsonRpcError, JsonRpcMessage, JsonRpcVersion2_0, RequestId,
    ServerJsonRpcMessage, ServerNotification,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// The most bytes the answer to a request may have, carried in the request's extensions
/// (never sent) from the caller to the transport.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AnswerLimit(pub(crate) usize);

/// Why an answer was replaced here by an error.
#[derive(Debug, Clone)]
pub(crate) enum Refusal {
    /// It had at least `size` bytes, more than `limit`.
    TooLarge { size: usize, limit: usize },
    /// It was JSON with the request's id, but no JSON-RPC answer.
    Unreadable(String),
}

/// The shared state of one connection.
#[derive(Debug)]
pub(crate) struct Wire {
    list_changed: AtomicU64,
    /// The answer limit of each request sent and not yet answered.
    pending: Mutex<HashMap<RequestId, usize>>,
    refused: Mutex<HashMap<RequestId, Refusal>>,
    /// Why the transport stopped reading, when the server is to blame.
    fatal: Mutex<Option<String>>,
    /// The limit of a request that carries none, and the bound of every limit.
    max_message_bytes: usize,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Wire {
    pub(crate) fn new(max_message_bytes: usize) -> Self {
        Wire {
            list_changed: AtomicU64::new(0),
            pending: Mutex::default(),
            refused: Mutex::default(),
            fatal: Mutex::default(),
            max_message_bytes,
        }
    }

    /// How many `notifications/tools/list_changed` have been read.
    pub(crate) fn list_changes(&self) -> u64 {
        self.list_changed.load(Ordering::SeqCst)
    }

    /// Notes a message read from the server, before rmcp sees it.
    pub(crate) fn observe(&self, message: &ServerJsonRpcMessage) {
        if let JsonRpcMessage::Notification(n) = message
            && matches!(
                n.notification,
                ServerNotification::ToolListChangedNotification(_)
            )
        {
            self.list_changed.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Notes a message about to be sent: a request's answer limit.
    pub(crate) fn sending(&self, message: &TxJsonRpcMessage<RoleClient>) {
        if let JsonRpcMessage::Request(request) = message {
            use rmcp::model::GetExtensions as _;
            let limit = request
                .request
                .extensions()
                .get::<AnswerLimit>()
                .map_or(self.max_message_bytes, |l| l.0.min(self.max_message_bytes));
            lock(&self.pending).insert(request.id.clone(), limit);
        }
    }

    /// The largest answer any pending request may get: how much a reader may hold of one
    /// message. At least 1 MiB (for notifications and the server's own requests).
    pub(crate) fn read_limit(&self) -> usize {
        let pending = lock(&self.pending);
        let largest = pending.values().copied().max().unwrap_or(0);
        largest.max(1 << 20).min(self.max_message_bytes)
    }

    /// The limit of the pending request `id`, which is answered now: forgotten.
    pub(crate) fn answered(&self, id: &RequestId) -> Option<usize> {
        lock(&self.pending).remove(id)
    }

    /// Forgets the request `id` (answered, timed out or abandoned), and returns why its
    /// answer was refused here, if it was.
    pub(crate) fn finish(&self, id: &RequestId) -> Option<Refusal> {
        lock(&self.pending).remove(id);
        lock(&self.refused).remove(id)
    }

    /// Records that the answer to `id` was refused, and returns the error message that
    /// stands in for it, for rmcp to hand to the waiting request.
    pub(crate) fn refuse(&self, id: RequestId, why: Refusal) -> ServerJsonRpcMessage {
        let message = match &why {
            Refusal::TooLarge { size, limit } => {
                format!("answer refused by lwir-mcp: at least {size} bytes, more than {limit}")
            }
            Refusal::Unreadable(what) => format!("answer refused by lwir-mcp: {what}"),
        };
        lock(&self.refused).insert(id.clone(), why);
        JsonRpcMessage::Error(JsonRpcError {
            jsonrpc: JsonRpcVersion2_0,
            id: Some(id),
            error: ErrorData {
                code: ErrorCode::INTERNAL_ERROR,
                message: message.into(),
                data: None,
            },
        })
    }

    /// Records why the connection stopped (the first reason wins).
    pub(crate) fn set_fatal(&self, why: String) {
        let mut fatal = lock(&self.fatal);
        if fatal.is_none() {
            *fatal = Some(why);
        }
    }

    /// Why the connection stopped, when the server broke the protocol.
    pub(crate) fn fatal(&self) -> Option<String> {
        lock(&self.fatal).clone()
    }
}

/// A transport whose traffic the [`Wire`] watches: for transports rmcp reads itself (HTTP).
/// It counts tool-list changes and applies answer limits to what was parsed (rmcp's own
/// limits bound what it buffers).
pub(crate) struct Observed<T> {
    pub(crate) inner: T,
    pub(crate) wire: std::sync::Arc<Wire>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Observed<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.wire.sending(&item);
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        self.wire.observe(&message);
        let id = match &message {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            _ => None,
        };
        if let Some(id) = id
            && let Some(limit) = self.wire.answered(&id)
        {
            let size = serialized_len(&message);
            if size > limit {
                return Some(self.wire.refuse(id, Refusal::TooLarge { size, limit }));
            }
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// How many bytes `value` has as compact JSON, counted without holding them.
fn serialized_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}
