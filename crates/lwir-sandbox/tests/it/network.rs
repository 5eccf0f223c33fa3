//! No network at all: not the host's loopback, not the outside.

use std::io::ErrorKind;
use std::net::TcpListener;

use crate::support::{bash, both, python, run, sandbox_or_skip};

#[test]
fn neither_a_listener_on_the_hosts_loopback_nor_a_public_address_is_reachable() {
    let sandbox = sandbox_or_skip!();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();

    let program = format!(
        "import socket\n\
         print('interfaces', [name for _, name in socket.if_nameindex()])\n\
         for host, port in [('127.0.0.1', {port}), ('1.1.1.1', 80), ('8.8.8.8', 53)]:\n    \
             try:\n        \
                 socket.create_connection((host, port), timeout=3)\n        \
                 print(host, 'connected')\n    \
             except OSError as e:\n        \
                 print(host, 'failed', e.errno)\n\
         try:\n    \
             socket.getaddrinfo('example.com', 80)\n    \
             print('resolved')\n\
         except OSError:\n    \
             print('no name resolution')\n"
    );
    let outcome = run(sandbox, &python(&program));
    let text = outcome.stdout_text();
    assert!(text.contains("interfaces ['lo']"), "{}", both(&outcome));
    assert!(!text.contains("connected"), "{text}");
    assert!(
        text.contains(&format!("127.0.0.1 failed {}", libc::ECONNREFUSED)),
        "{text}"
    );
    assert!(
        text.contains(&format!("1.1.1.1 failed {}", libc::ENETUNREACH)),
        "{text}"
    );
    assert!(text.contains("no name resolution"), "{text}");

    if std::path::Path::new("/usr/bin/curl").exists() {
        let outcome = run(
            sandbox,
            &bash(&format!(
                "curl -sS --max-time 3 http://127.0.0.1:{port}/; echo \"curl $?\"; \
                 curl -sS --max-time 3 http://1.1.1.1/; echo \"curl $?\""
            )),
        );
        // 7: could not connect.
        assert_eq!(
            outcome.stdout_text(),
            "curl 7\ncurl 7\n",
            "{}",
            both(&outcome)
        );
    }
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the host's listener was reached: {other:?}"),
    }
}
