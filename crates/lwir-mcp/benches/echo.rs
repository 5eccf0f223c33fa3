//! `echo` calls to `@modelcontextprotocol/server-everything` over stdio through
//! [`lwir_mcp::Server`] (rmcp inside), next to the same calls made by a minimal JSON-RPC
//! client written here (no SDK: one reader thread, answers matched to callers by id) over
//! the same server: 1 000 and 10 000 calls, one after the other and 16 at once. Each
//! client has a server process of its own, started once.
//!
//! Run with `LWIRC_TEST_MCP_EVERYTHING=…/dist/index.js cargo bench -p lwir-mcp --bench
//! echo` and compare the throughputs of `lwir-mcp` and `plain` (calls per second).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use lwir_mcp::{CallOptions, Server, StdioSpec, ToolValue};
use serde_json::{Value, json};

/// How the calls are made.
trait Client: Sync {
    /// One `echo` call; returns the echoed text.
    fn echo(&self, message: &str) -> String;
}

impl Client for Server {
    fn echo(&self, message: &str) -> String {
        let result = self
            .call(
                "echo",
                json!({ "message": message }),
                &CallOptions::default(),
            )
            .unwrap();
        match result.value {
            ToolValue::Text(text) => text,
            other => panic!("{other:?}"),
        }
    }
}

/// A minimal MCP client over stdio: requests written under a lock, one thread reading
/// answers and handing each to the caller waiting for its id.
struct Plain {
    child: Child,
    stdin: Mutex<ChildStdin>,
    waiting: Arc<Mutex<HashMap<u64, Sender<Value>>>>,
    next: AtomicU64,
}

impl Plain {
    fn start(command: &[String]) -> Plain {
        let mut child = Command::new(&command[0])
            .args(&command[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take().unwrap();
        let waiting: Arc<Mutex<HashMap<u64, Sender<Value>>>> = Arc::default();
        let readers = Arc::clone(&waiting);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let message: Value = serde_json::from_str(&line).unwrap();
                if let Some(id) = message.get("id").and_then(Value::as_u64)
                    && let Some(tx) = readers.lock().unwrap().remove(&id)
                {
                    let _ = tx.send(message);
                }
            }
        });
        let plain = Plain {
            child,
            stdin: Mutex::new(stdin),
            waiting,
            next: AtomicU64::new(1),
        };
        plain.request(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "plain", "version": "0"}
            }),
        );
        plain.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        plain
    }

    fn send(&self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        let mut stdin = self.stdin.lock().unwrap();
        stdin.write_all(&line).unwrap();
        stdin.flush().unwrap();
    }

    fn request(&self, method: &str, params: Value) -> Value {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = channel();
        self.waiting.lock().unwrap().insert(id, tx);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        rx.recv_timeout(Duration::from_secs(60)).unwrap()
    }
}

impl Client for Plain {
    fn echo(&self, message: &str) -> String {
        let answer = self.request(
            "tools/call",
            json!({"name": "echo", "arguments": {"message": message}}),
        );
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

impl Drop for Plain {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `calls` echo calls, `parallel` at a time (each of `parallel` threads makes its share).
fn run(client: &dyn Client, calls: usize, parallel: usize) {
    std::thread::scope(|scope| {
        for t in 0..parallel {
            scope.spawn(move || {
                for i in (t..calls).step_by(parallel) {
                    let text = client.echo(&format!("m{i}"));
                    assert_eq!(text.len(), format!("Echo: m{i}").len());
                }
            });
        }
    });
}

/// CPU time this process (not the servers) has used, in seconds.
fn cpu_seconds() -> f64 {
    // SAFETY: `getrusage` fills the struct it is given and touches nothing else.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// One run of `calls` calls, `parallel` at once, told on standard error: calls per second
/// and the client's own CPU time per call (which the load of other processes on the
/// machine does not change).
fn tell(name: &str, client: &dyn Client, calls: usize, parallel: usize) {
    let (start, cpu) = (Instant::now(), cpu_seconds());
    run(client, calls, parallel);
    let (wall, cpu) = (start.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    eprintln!(
        "{name:>8}: {calls:>6} calls, {parallel:>2} at once: {:>6.0} calls/s, client CPU {:>5.1} µs a call",
        calls as f64 / wall,
        cpu / calls as f64 * 1e6
    );
}

fn echo(c: &mut Criterion) {
    let Some(index) = std::env::var("LWIRC_TEST_MCP_EVERYTHING")
        .ok()
        .filter(|v| !v.is_empty())
    else {
        eprintln!(
            "skipped: set LWIRC_TEST_MCP_EVERYTHING to the dist/index.js of server-everything"
        );
        return;
    };
    let command: Vec<String> = vec!["node".into(), index, "stdio".into()];
    let sdk = Server::start_stdio(&StdioSpec::new("everything", command.clone())).unwrap();
    let plain = Plain::start(&command);
    let clients: [(&str, &dyn Client); 2] = [("lwir-mcp", &sdk), ("plain", &plain)];
    for (calls, parallel) in [(1_000, 1), (1_000, 16), (10_000, 1), (10_000, 16)] {
        for (name, client) in clients {
            tell(name, client, calls, parallel);
        }
    }

    for calls in [1_000, 10_000] {
        let mut group = c.benchmark_group(format!("echo/{calls}"));
        group.sample_size(10);
        group.throughput(Throughput::Elements(calls as u64));
        for parallel in [1, 16] {
            for (name, client) in clients {
                group.bench_function(
                    BenchmarkId::new(name, format!("parallel-{parallel}")),
                    |b| {
                        b.iter_custom(|iters| {
                            let start = Instant::now();
                            for _ in 0..iters {
                                run(client, calls, parallel);
                            }
                            start.elapsed()
                        });
                    },
                );
            }
        }
        group.finish();
    }
}

criterion_group!(benches, echo);
criterion_main!(benches);
