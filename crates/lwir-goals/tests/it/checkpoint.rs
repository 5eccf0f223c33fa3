//! The checkpointed fold equals the full fold: for random goal histories — reports that are
//! recorded and reports that are refused, appends that lose a race, torn last lines, events
//! of kinds this lwirc does not know, a log rewritten behind lwirc's back — and a checkpoint
//! that is missing, stale, corrupt, of another goal or of another format, what
//! [`Goals::fold`] makes (checkpoint plus the events after it) is what replaying the whole
//! log makes, and so is every projection of it.
//!
//! And the statuses a driver keeps ([`Fold::keep_statuses`]) — brought up to date by each
//! event it folds rather than computed again — are the statuses of the full fold, and so is
//! every projection made with them, on the same histories and on a goal whose items depend
//! on one another, fail for good and spend the goal's attempts (so that failures block
//! their dependents and the budgets run out).
//!
//! A seeded generator rather than a property-testing crate: every history is reproducible
//! from its seed, which a failure names.

use crate::common;

use std::io::Write;

use common::{By, World, goal_file};
use lwir_goals::events::GoalEvent;
use lwir_goals::goal::Report;
use lwir_goals::projection::{self, Fold};
use lwir_goals::store::{CHECKPOINT, Store};
use serde_json::{Value, json};

/// xorshift64*: small, seeded, and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A goal of `n` mirror-log items and the notes root after them, with room for many attempts.
fn wide_goal(n: usize) -> Value {
    let mut file = goal_file();
    let mut work: Vec<Value> = (0..n)
        .map(|i| json!({ "key": format!("m{i}"), "template": "mirror-log", "input": {} }))
        .collect();
    let after: Vec<String> = (0..n).map(|i| format!("m{i}")).collect();
    work.push(json!({
        "key": "notes", "template": "notes", "after": after,
        "input": { "repo": "${ goal.input.repo }" }
    }));
    file["work"] = Value::Array(work);
    file["templates"]["mirror-log"]["max_attempts"] = json!(100);
    file["templates"]["notes"]["max_attempts"] = json!(100);
    file["limits"]["max_total_attempts"] = json!(10000);
    file["limits"]["max_parallel"] = json!(3);
    file
}

/// A goal of 20 mirror-log items, each after a random few of the ones before it, and the
/// notes root after all of them: 2 attempts an item, 120 in all.
fn tangled_goal(rng: &mut Rng) -> Value {
    let mut file = wide_goal(20);
    for i in 0..20 {
        let after: Vec<String> = (0..i)
            .filter(|_| rng.below(5) == 0)
            .map(|j| format!("m{j}"))
            .collect();
        file["work"][i]["after"] = json!(after);
    }
    file["templates"]["mirror-log"]["max_attempts"] = json!(2);
    file["limits"]["max_total_attempts"] = json!(120);
    file
}

/// A driver's fold of `goal`: the events appended since it last looked folded into the one
/// it keeps, with its statuses kept (read whole again when the log no longer continues it).
fn follow(world: &World, goal: &str, held: &mut Option<Fold>) -> Option<Fold> {
    let file = lwir_goals::file::read(world.store.frozen(goal).unwrap().unwrap())
        .file
        .unwrap();
    let events = world.store.events(goal).ok()?;
    let continued = held.take().filter(|fold| {
        let seq = fold.last_seq as usize;
        seq <= events.len() && Fold::of(&events[..seq]).ok().as_ref() == Some(fold)
    });
    let mut fold = match continued {
        Some(mut fold) => {
            let from = fold.last_seq as usize;
            for event in &events[from..] {
                fold.apply_event(event).ok()?;
            }
            fold
        }
        None => Fold::of(&events).ok()?,
    };
    fold.keep_statuses(&file, common::now());
    *held = Some(fold.clone());
    Some(fold)
}

/// The driver's kept statuses are the full fold's, and its projection is the full one; the
/// work statuses it shows, added to `seen`.
fn same_kept(
    world: &World,
    goal: &str,
    held: &mut Option<Fold>,
    seen: &mut std::collections::BTreeSet<String>,
    (seed, step, what): (u64, usize, &str),
) {
    let Ok((full_fold, projection)) = full(world, goal) else {
        return;
    };
    for w in projection["governed_work"].as_array().into_iter().flatten() {
        seen.insert(w["status"].as_str().unwrap_or_default().to_owned());
    }
    let kept = follow(world, goal, held).expect("the log folds");
    assert!(kept.keeps_statuses());
    let file = lwir_goals::file::read(world.store.frozen(goal).unwrap().unwrap())
        .file
        .unwrap();
    let (a, b) = (
        kept.statuses(&file, common::now()),
        full_fold.statuses(&file, common::now()),
    );
    assert!(
        *a == *b,
        "seed {seed}, step {step} ({what}): the kept statuses differ\nkept: {a:?}\nfull: {b:?}"
    );
    assert_eq!(
        project(world, goal, &kept),
        projection,
        "seed {seed}, step {step} ({what}): the projection with the kept statuses differs"
    );
}

/// What the whole log folds to, and its projection; or the error of either.
fn full(world: &World, goal: &str) -> Result<(Fold, Value), String> {
    let events = world.store.events(goal).map_err(|e| e.to_string())?;
    let fold = Fold::of(&events)?;
    let projection = project(world, goal, &fold);
    Ok((fold, projection))
}

/// The projection of `fold` (the goal file read back from the store), as JSON.
fn project(world: &World, goal: &str, fold: &Fold) -> Value {
    let bytes = world.store.frozen(goal).unwrap().unwrap();
    let file = lwir_goals::file::read(bytes).file.unwrap();
    let p = projection::project(
        fold,
        &projection::Inputs {
            file: &file,
            now_unix_s: common::now(),
            in_progress: &|_| false,
        },
    );
    // The fingerprint written straight from the projection is the one its JSON value has,
    // and the text `goal show` prints is serde_json's.
    assert_eq!(p.fingerprint, projection::fingerprint_of_value(&p));
    let mut p = p;
    assert_eq!(
        p.to_string_pretty(),
        serde_json::to_string_pretty(&p).unwrap()
    );
    serde_json::to_value(p).unwrap()
}

/// What the checkpointed read folds to, and its projection; or its error.
fn checkpointed(world: &World, goal: &str) -> Result<(Fold, Value), String> {
    let (fold, _) = world.goals().fold(goal).map_err(|e| e.to_string())?;
    let projection = project(world, goal, &fold);
    Ok((fold, projection))
}

/// The same, and every projection the same; the full fold's error is the checkpointed
/// read's error.
fn same(world: &World, goal: &str, seed: u64, step: usize, what: &str) {
    let want = full(world, goal);
    let got = checkpointed(world, goal);
    match (&want, &got) {
        (Ok(w), Ok(g)) => {
            assert!(
                w.0 == g.0,
                "seed {seed}, step {step} ({what}): the folds differ\nfull: {:?}\ncheckpointed: {:?}",
                w.0,
                g.0
            );
            assert_eq!(
                w.1, g.1,
                "seed {seed}, step {step} ({what}): the projections differ"
            );
        }
        (Err(w), Err(g)) => assert!(
            g.contains(w.as_str()),
            "seed {seed}, step {step} ({what}): full `{w}`, checkpointed `{g}`"
        ),
        _ => panic!("seed {seed}, step {step} ({what}): full {want:?}, checkpointed {got:?}"),
    }
    // And `show` (which reads through the checkpoint too) agrees with the full fold.
    if let Ok((_, projection)) = &want {
        let shown = serde_json::to_value(world.goals().show(goal).unwrap()).unwrap();
        assert_eq!(
            &shown, projection,
            "seed {seed}, step {step} ({what}): `show` differs"
        );
    }
}

fn log_path(world: &World, goal: &str) -> std::path::PathBuf {
    world.store.goal_dir(goal).join("events.jsonl")
}

fn checkpoint_path(world: &World, goal: &str) -> std::path::PathBuf {
    world.store.goal_dir(goal).join(CHECKPOINT)
}

/// One random thing done to the goal (or its checkpoint); what, for messages.
fn act(world: &World, goal: &str, other: &str, rng: &mut Rng, saved: &mut Vec<Vec<u8>>) -> String {
    let goals = world.goals();
    let work = match rng.below(21) {
        0 => "notes".to_owned(),
        n => format!("m{}", n - 1),
    };
    let last = world.store.events(goal).map_or(0, |e| e.len() as u64);
    let checkpoint = checkpoint_path(world, goal);
    match rng.below(20) {
        0..=2 => {
            let _ = goals.report(goal, &work, &Report::Dispatched);
            format!("dispatched {work}")
        }
        3..=4 => {
            let _ = goals.report(goal, &work, &Report::Started);
            format!("started {work}")
        }
        5 => {
            // Rarely, and never the root: the goal goes on for the whole history.
            if work != "notes" && rng.below(4) == 0 {
                let output = json!({ "copied": rng.below(1000) });
                let _ = goals.report(goal, &work, &Report::Succeeded(output));
            }
            format!("succeeded {work}")
        }
        6 => {
            // An output that breaks the schema: refused, nothing written.
            let output = json!({ "notes": 5 });
            let _ = goals.report(goal, "notes", &Report::Succeeded(output));
            "a refused output".to_owned()
        }
        7..=8 => {
            let _ = goals.report(
                goal,
                &work,
                &Report::Failed(format!("boom {}", rng.below(9))),
            );
            format!("failed {work}")
        }
        9 => {
            // A writer that read a stale log loses the race: nothing is written.
            let stale = last.saturating_sub(1 + rng.below(3));
            let data = json!({ "work": "x", "attempt": 1, "error": "late" });
            let late = GoalEvent::parse(GoalEvent::FAILED, &data).unwrap();
            let e = world.store.append(goal, &late, stale);
            assert!(last == stale || e.is_err(), "a stale append was written");
            "a stale append".to_owned()
        }
        10 => {
            // An event this lwirc does not know (a newer one's).
            let data = json!({ "note": rng.below(100) });
            let noted = GoalEvent::Other("goal.noted".into(), data);
            world.store.append(goal, &noted, last).unwrap();
            "an unknown event".to_owned()
        }
        11 => {
            // A writer that died mid-line.
            let torn = format!(
                "{{\"seq\":{},\"time\":\"2026-12-01T00:00:00.000Z\",\"event\":\"work.fa",
                last + 1
            );
            let cut = 1 + rng.below(torn.len() as u64 - 1) as usize;
            std::fs::OpenOptions::new()
                .append(true)
                .open(log_path(world, goal))
                .unwrap()
                .write_all(&torn.as_bytes()[..cut])
                .unwrap();
            "a torn last line".to_owned()
        }
        12 => {
            let _ = std::fs::remove_file(&checkpoint);
            "the checkpoint removed".to_owned()
        }
        13 => {
            // A checkpoint kept from earlier: it covers a shorter prefix of the log.
            if let Ok(bytes) = std::fs::read(&checkpoint) {
                saved.push(bytes);
            }
            if !saved.is_empty() {
                let old = &saved[rng.below(saved.len() as u64) as usize];
                std::fs::write(&checkpoint, old).unwrap();
            }
            "a stale checkpoint".to_owned()
        }
        14 => {
            let Ok(mut bytes) = std::fs::read(&checkpoint) else {
                return "no checkpoint to corrupt".to_owned();
            };
            match rng.below(4) {
                0 if !bytes.is_empty() => {
                    let at = rng.below(bytes.len() as u64) as usize;
                    bytes[at] ^= 1 << rng.below(8);
                }
                1 => bytes.truncate(rng.below(bytes.len() as u64 + 1) as usize),
                2 => bytes = b"\xff\xfe not a checkpoint\n{]".to_vec(),
                _ => {
                    let text = String::from_utf8_lossy(&bytes).replacen(
                        lwir_goals::checkpoint::FORMAT,
                        "lwir-goal-fold/0",
                        1,
                    );
                    bytes = text.into_bytes();
                }
            }
            std::fs::write(&checkpoint, bytes).unwrap();
            "a corrupt checkpoint".to_owned()
        }
        15 => {
            // Another goal's checkpoint in its place.
            let _ = world.goals().fold(other);
            if let Ok(bytes) = std::fs::read(checkpoint_path(world, other)) {
                std::fs::write(&checkpoint, bytes).unwrap();
            }
            "another goal's checkpoint".to_owned()
        }
        16 => {
            // A checkpoint written now (a driver finishing, say).
            let _ = world.goals().fold(goal);
            "a read".to_owned()
        }
        _ => {
            let _ = goals.report(goal, &work, &Report::Dispatched);
            let _ = goals.report(goal, &work, &Report::Failed("again".into()));
            format!("ran {work}")
        }
    }
}

#[test]
fn the_checkpointed_fold_is_the_full_fold_for_random_histories() {
    for seed in 1..=6u64 {
        let world = World::new();
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        // Seeds 5 and 6: items that depend on one another and fail for good.
        let file = if seed <= 4 {
            wide_goal(20)
        } else {
            tangled_goal(&mut rng)
        };
        let goal = world.create(&file);
        let mut second = wide_goal(2);
        second["objective"] = json!("Another week.");
        let other = world.create(&second);
        let mut saved = Vec::new();
        let mut held = None;
        let mut seen = std::collections::BTreeSet::new();
        for step in 0..250 {
            let what = act(&world, &goal, &other, &mut rng, &mut saved);
            same(&world, &goal, seed, step, &what);
            same_kept(&world, &goal, &mut held, &mut seen, (seed, step, &what));
        }
        if seed > 4 {
            // What the tangled goal is for: failures that block, budgets that run out.
            for status in ["blocked", "failed", "pending", "running", "ready"] {
                assert!(
                    seen.contains(status),
                    "seed {seed}: no item was {status}: {seen:?}"
                );
            }
            continue;
        }
        assert!(
            world.store.events(&goal).unwrap().len() > lwir_goals::checkpoint::EVERY,
            "seed {seed}: the history ({} events) is long enough to be checkpointed",
            world.store.events(&goal).unwrap().len()
        );
        // A read leaves a checkpoint that reads back, of a prefix of the log.
        let (fold, _) = world.goals().fold(&goal).unwrap();
        let bytes = std::fs::read(checkpoint_path(&world, &goal)).unwrap();
        let (kept, position) = lwir_goals::checkpoint::decode(&bytes).expect("a checkpoint");
        assert!(position.seq <= fold.last_seq && kept.last_seq == position.seq);
    }
}

#[test]
fn a_log_rewritten_behind_lwircs_back_is_not_read_through_its_checkpoint() {
    let world = World::new();
    let goal = world.create(&wide_goal(3));
    let goals = world.goals();
    for i in 0..40 {
        let work = format!("m{}", i % 3);
        goals.report(&goal, &work, &Report::Dispatched).unwrap();
        goals
            .report(&goal, &work, &Report::Failed(format!("boom {i}")))
            .unwrap();
    }
    goals.fold(&goal).unwrap();
    assert!(
        checkpoint_path(&world, &goal).exists(),
        "a checkpoint was stored"
    );
    // An error rewritten into another, every chain hash computed again from there on.
    let path = log_path(&world, &goal);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut previous = String::new();
    let mut out = String::new();
    for line in text.lines() {
        let mut value: Value = serde_json::from_str(line).unwrap();
        value.as_object_mut().unwrap().remove("chain");
        if value["data"]["error"] == "boom 3" {
            value["data"]["error"] = json!("quiet");
        }
        let event: lwir_repair::events::Event = serde_json::from_value(value.clone()).unwrap();
        previous = lwir_repair::events::chain_of(&previous, &event);
        value["chain"] = Value::String(previous.clone());
        out.push_str(&value.to_string());
        out.push('\n');
    }
    std::fs::write(&path, out).unwrap();
    let (fold, _) = goals.fold(&goal).unwrap();
    let errors: Vec<&str> = fold
        .items
        .iter()
        .flat_map(|i| &i.attempts)
        .filter_map(|a| match &a.state {
            projection::AttemptState::Failed { error, .. } => Some(error.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        errors.contains(&"quiet"),
        "the log, not the checkpoint, was read"
    );
    same(&world, &goal, 0, 0, "rewritten");
}

#[test]
fn a_driver_keeps_its_fold_and_folds_what_others_append_meanwhile() {
    let world = World::new();
    let mut file = wide_goal(3);
    file["limits"]["max_parallel"] = json!(1);
    let goal = world.create(&file);
    // A runner that succeeds, and while it runs `m0` another writer (a runtime, through its
    // own `goal report`) records a failed attempt of `m1`: an append the driver did not make.
    let runner = By("meddling", |request| {
        let key = request["work"]["key"].as_str().unwrap_or_default();
        if key == "m0" {
            let goals = world.goals();
            goals
                .report(&goal, "m1", &Report::Failed("by hand".into()))
                .unwrap();
        }
        let output = if key == "notes" {
            json!({ "notes": "n", "count": 1 })
        } else {
            json!({ "copied": 1 })
        };
        json!({ "kind": "succeeded", "output": output })
    });
    let report = world
        .goals()
        .run(&goal, &runner, None, None, &mut lwir_goals::run::Quiet)
        .unwrap();
    assert_eq!(report.status, projection::Status::Succeeded, "{report:?}");
    let (fold, shown) = full(&world, &goal).unwrap();
    let m1 = fold.items.iter().find(|i| i.spec.key == "m1").unwrap();
    assert_eq!(
        m1.attempts.len(),
        2,
        "the failure by hand, then the driver's own attempt"
    );
    assert_eq!(
        serde_json::to_value(world.goals().show(&goal).unwrap()).unwrap(),
        shown
    );
    same(&world, &goal, 0, 0, "after the run");
}
