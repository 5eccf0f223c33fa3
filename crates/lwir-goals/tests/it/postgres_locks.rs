//! Run locks in PostgreSQL: one driver per goal, across processes and within one, however
//! many goals one process drives (`LWIRC_TEST_POSTGRES`; skipped without it).

use lwir_goals::postgres::Postgres;
use lwir_goals::store::{Store, StoreError};

#[test]
fn one_process_holds_the_run_locks_of_more_goals_than_the_server_has_connections() {
    let Some(url) = crate::common::postgres_database("lwirc_run_locks") else {
        return;
    };
    let store = Postgres::connect(&url).unwrap();
    let other = Postgres::connect(&url).unwrap();
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let max: i64 = client
        .query_one("SELECT current_setting('max_connections')::bigint", &[])
        .unwrap()
        .get(0);
    // More goals than the server takes connections: each lock held at once.
    let goals: Vec<String> = (0..=max + 10).map(|i| format!("g-{i}")).collect();
    let guards: Vec<_> = goals
        .iter()
        .map(|goal| store.lock_run(goal).unwrap())
        .collect();
    let busy = |result: Result<_, StoreError>| matches!(result, Err(StoreError::Busy { .. }));
    // Refused to another process's store, and to a second driver in this one.
    assert!(busy(other.lock_run("g-0")));
    assert!(busy(store.lock_run("g-0")));
    assert!(busy(other.lock_run(goals.last().unwrap())));
    // Released when the guard is dropped: the other process takes it, this one is refused.
    drop(guards);
    let taken = other.lock_run("g-0").unwrap();
    assert!(busy(store.lock_run("g-0")));
    drop(taken);
    assert!(store.lock_run("g-0").is_ok());
}
