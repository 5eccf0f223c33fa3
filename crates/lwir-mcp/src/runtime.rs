//! The one tokio runtime every connection of the process shares.
//!
//! A multi-thread runtime with two worker threads, started on first use and never shut
//! down. Each connection's rmcp service loop, its reader and the tasks that write its
//! messages run on it; a blocking caller polls its own request on its own thread
//! ([`block`]: a multi-thread runtime lets any number of threads do so at once, its workers
//! driving the I/O), and a caller that is itself inside an async runtime, where that would
//! panic, hands the request to a worker and waits for the answer. Two workers let the
//! service loop of a busy connection and its reader (which parses the server's answers)
//! run side by side; more would compete with the rest of lwirc for the cores.
//!
//! Server processes are spawned from a worker ([`spawn_on_worker`]): on Linux a server is
//! told to stop when the thread that started it ends (`PR_SET_PDEATHSIG`), and the workers
//! live as long as the process, unlike the caller's thread.

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Builder, Runtime};

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// The shared runtime.
pub(crate) fn get() -> &'static Runtime {
    RUNTIME.get_or_init(|| {
        Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("lwir-mcp")
            .enable_io()
            .enable_time()
            .build()
            // Building fails only when the operating system refuses threads or an epoll
            // instance; nothing in lwirc can go on without them.
            .expect("lwir-mcp: cannot start its tokio runtime")
    })
}

/// Runs `future` on the shared runtime and waits for its output on this thread.
pub(crate) fn block<F>(future: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_err() {
        // Polled on this thread: one hand-over between threads less per request.
        return get().block_on(future);
    }
    // Inside a runtime (another one's, or on one of ours), where `block_on` would panic.
    on_worker(future)
}

/// Runs `future` as a task of the shared runtime and waits for its output.
fn on_worker<F>(future: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    get().spawn(async move {
        let _ = tx.send(future.await);
    });
    match rx.recv() {
        Ok(output) => output,
        // The task panicked (a bug in rmcp or here): pass the panic on to the caller.
        Err(_) => panic!("lwir-mcp: a task on its runtime panicked"),
    }
}

/// Runs `f` on a worker of the shared runtime (not on the caller's thread, nor on a
/// blocking-pool thread: either may end before the process does) and waits for its result.
pub(crate) fn spawn_on_worker<T, F>(f: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    on_worker(async move { f() })
}
