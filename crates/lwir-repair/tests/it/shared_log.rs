//! `events::append_shared`: a log several writers append to in turn (a goal's). Eight
//! writers at once lose nothing and leave no gap; a writer that expected another last
//! event writes nothing; a torn last line is dropped.

use std::path::PathBuf;
use std::sync::{Arc, Barrier};

use lwir_repair::events::{LogError, append_shared, append_shared_waiting, read};
use serde_json::json;

fn log_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("goal-1/events.jsonl")
}

#[test]
fn eight_writers_at_once_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = Arc::new(log_in(&dir));
    let barrier = Arc::new(Barrier::new(8));
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (path, barrier) = (Arc::clone(&path), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                (0..40)
                    .map(|i| {
                        append_shared(&path, "work.reported", json!({ "writer": w, "i": i }), None)
                            .unwrap()
                            .seq
                    })
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    let mut seqs: Vec<u64> = writers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=320).collect::<Vec<u64>>());
    let events = read(&path).unwrap();
    assert_eq!(events.len(), 320);
    for w in 0..8 {
        // Each writer's events are all there, in its own order.
        let mine: Vec<i64> = events
            .iter()
            .filter(|e| e.data["writer"] == w)
            .map(|e| e.data["i"].as_i64().unwrap())
            .collect();
        assert_eq!(mine, (0..40).collect::<Vec<i64>>());
    }
}

#[test]
fn an_append_expecting_another_last_event_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    assert_eq!(
        append_shared(&path, "goal.created", json!({}), Some(0))
            .unwrap()
            .seq,
        1
    );
    assert_eq!(
        append_shared(&path, "plan.requested", json!({}), Some(1))
            .unwrap()
            .seq,
        2
    );
    // Two replans decided on the same state: the second is refused.
    let err = append_shared(&path, "plan.requested", json!({}), Some(1)).unwrap_err();
    assert!(
        matches!(
            err,
            LogError::Conflict {
                expected: 1,
                found: 2,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(read(&path).unwrap().len(), 2);
}

#[test]
fn a_torn_last_line_is_dropped_and_the_log_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    append_shared(&path, "goal.created", json!({ "goal": "g" }), None).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(br#"{"seq":2,"time":"2026-12-01T00:00:00.000Z","ev"#);
    std::fs::write(&path, &bytes).unwrap();
    let event = append_shared(&path, "work.started", json!({}), Some(1)).unwrap();
    assert_eq!(event.seq, 2);
    let events = read(&path).unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(events[1].event, "work.started");
    // A long last line is found however far back its start is.
    let long = "x".repeat(200_000);
    append_shared(&path, "work.succeeded", json!({ "output": long }), Some(2)).unwrap();
    assert_eq!(
        append_shared(&path, "work.started", json!({}), None)
            .unwrap()
            .seq,
        4
    );
    // Invalid events are refused before anything is written.
    assert!(matches!(
        append_shared(&path, "", json!({}), None),
        Err(LogError::Invalid { .. })
    ));
    assert!(matches!(
        append_shared(&path, "x", json!(1), None),
        Err(LogError::Invalid { .. })
    ));
    assert_eq!(read(&path).unwrap().len(), 4);
}

/// A writer that holds the lock and never lets go (stuck, stopped) does not make the next
/// one wait for ever: it gives up after its wait, writing nothing, and goes on once the
/// lock is free.
#[test]
fn a_lock_held_for_ever_is_waited_for_a_bounded_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    append_shared(&path, "goal.created", json!({}), None).unwrap();
    let holder = std::fs::File::open(&path).unwrap();
    holder.lock().unwrap();
    let wait = std::time::Duration::from_millis(200);
    let err = append_shared_waiting(&path, "work.started", json!({}), None, wait).unwrap_err();
    assert!(matches!(err, LogError::Busy { .. }), "{err:?}");
    assert!(
        err.to_string().contains("stayed locked by another writer"),
        "{err}"
    );
    assert_eq!(read(&path).unwrap().len(), 1);
    drop(holder);
    assert_eq!(
        append_shared_waiting(&path, "work.started", json!({}), None, wait)
            .unwrap()
            .seq,
        2
    );
}

#[test]
fn a_line_rewritten_after_it_was_written_is_found_by_every_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    for (i, kind) in ["goal.created", "work.started", "work.failed"]
        .iter()
        .enumerate()
    {
        append_shared(
            &path,
            kind,
            json!({ "error": format!("e{i}") }),
            Some(i as u64),
        )
        .unwrap();
    }
    assert_eq!(read(&path).unwrap().len(), 3);
    let original = std::fs::read_to_string(&path).unwrap();
    // Another valid event in line 2's place: its chain no longer matches.
    std::fs::write(&path, original.replace("\"e1\"", "\"e9\"")).unwrap();
    let err = read(&path).unwrap_err();
    assert!(
        matches!(&err, LogError::Damaged { line: 2, reason, .. } if reason.contains("changed after it was written")),
        "{err}"
    );
    // A chain taken off the last line (to hide a change there) is found too.
    let lines: Vec<&str> = original.lines().collect();
    let last: serde_json::Value = serde_json::from_str(lines[2]).unwrap();
    let mut unchained = last.as_object().unwrap().clone();
    unchained.remove("chain");
    let text = format!(
        "{}\n{}\n{}\n",
        lines[0],
        lines[1],
        serde_json::Value::Object(unchained)
    );
    std::fs::write(&path, text).unwrap();
    let err = read(&path).unwrap_err();
    assert!(matches!(&err, LogError::Damaged { line: 3, .. }), "{err}");
    // Put back, the log reads and takes the next append, chained after the last.
    std::fs::write(&path, &original).unwrap();
    append_shared(&path, "work.started", json!({}), Some(3)).unwrap();
    assert_eq!(read(&path).unwrap().len(), 4);
}
