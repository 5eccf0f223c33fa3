//! `lwirc goals`: the goal store as a whole — copy goals between stores, verify them.

use std::path::PathBuf;

use lwir_goals::goal::Goals;
use lwir_goals::store::{Store, StoreError};
use lwir_goals::templates::RegistryTemplates;
use lwir_render::terminal::sanitize;

use super::goal::open_store;
use super::open_registry;
use crate::exit;

/// Copy goals between stores, or verify a store.
///
/// A store is a directory (`.lwir/goals`) or a PostgreSQL database
/// (`postgres://USER@HOST:PORT/DATABASE`, migrated by lwirc on first use;
/// `?connect_timeout=SECONDS`, 10 by default, bounds the handshake, and
/// `statement_timeout=SECONDS`, 30, each statement).
///
/// Exit status: 0 fine, 1 a goal that does not verify or differs in the destination,
/// 2 usage error or a store that cannot be read or written.
///
/// Examples:
///   lwirc goals copy .lwir/goals postgres://lwir@db.example/goals
///   lwirc goals verify --goals postgres://lwir@db.example/goals
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: GoalsCommand,
}

#[derive(clap::Subcommand)]
enum GoalsCommand {
    /// Copy every goal from one store to another: its frozen file, its whole event log
    /// (times kept) and every plan's log and files. Goals already there are completed
    /// with the events they lack; one whose log there differs is a problem.
    Copy {
        /// The store to copy from.
        #[arg(value_name = "FROM")]
        from: PathBuf,
        /// The store to copy to.
        #[arg(value_name = "TO")]
        to: PathBuf,
    },
    /// Read every goal back as the goal commands do: its frozen file re-hashed against the
    /// digest its log recorded, its log read whole (and, in PostgreSQL, every event checked
    /// against the hash chained over the ones before it), every plan's log.
    Verify {
        /// The goal store (default: `$LWIR_GOALS`, else `.lwir/goals`).
        #[arg(long, value_name = "STORE")]
        goals: Option<PathBuf>,
    },
}

pub(crate) fn run(args: Args) -> anyhow::Result<u8> {
    match args.command {
        GoalsCommand::Copy { from, to } => copy(from, to),
        GoalsCommand::Verify { goals } => verify(goals),
    }
}

fn store(flag: Option<PathBuf>) -> anyhow::Result<Box<dyn Store>> {
    open_store(flag).map_err(|e| anyhow::anyhow!("{}", sanitize(&e.to_string())))
}

fn copy(from: PathBuf, to: PathBuf) -> anyhow::Result<u8> {
    let source = store(Some(from))?;
    let destination = store(Some(to))?;
    let (mut copied, mut present, mut problems) = (0, 0, 0);
    for goal in source.goals()? {
        match copy_goal(&*source, &*destination, &goal) {
            Ok(Err(why)) => {
                problems += 1;
                eprintln!("problem {}: {}", sanitize(&goal), sanitize(&why));
            }
            Ok(Ok(0)) => {
                present += 1;
                eprintln!("present {}", sanitize(&goal));
            }
            Ok(Ok(n)) => {
                copied += 1;
                eprintln!(
                    "copied  {} ({n} event{})",
                    sanitize(&goal),
                    if n == 1 { "" } else { "s" }
                );
            }
            Err(e @ (StoreError::Io { .. } | StoreError::Busy { .. })) => return Err(e.into()),
            Err(e) => {
                problems += 1;
                eprintln!("problem {}: {}", sanitize(&goal), sanitize(&e.to_string()));
            }
        }
    }
    eprintln!(
        "{copied} copied, {present} already there, {problems} problem{} ({} → {})",
        if problems == 1 { "" } else { "s" },
        source.location(),
        destination.location()
    );
    Ok(if problems == 0 {
        exit::OK
    } else {
        exit::FINDINGS
    })
}

/// Copies one goal: how many of its events were written, or why it was not copied (a
/// problem with this goal, not with the stores).
fn copy_goal(
    from: &dyn Store,
    to: &dyn Store,
    goal: &str,
) -> Result<Result<usize, String>, StoreError> {
    let bytes = from.frozen(goal)?.ok_or_else(|| StoreError::NotFound {
        goal: goal.to_owned(),
        location: from.location(),
    })?;
    let events = from.events(goal)?;
    let theirs = to.events(goal)?;
    if let Some(at) = theirs.iter().zip(&events).position(|(a, b)| a != b) {
        // Not damage: the same goal file created in both stores (or the goal driven in
        // both) has two histories, and copying one over the other would lose the other.
        return Ok(Err(format!(
            "it has a history of its own in {} (the logs differ from event {} on: the goal \
             was created or driven in both stores); nothing was copied, so that neither \
             history is lost: keep one store's goal and remove the other's",
            to.location(),
            at + 1
        )));
    }
    if theirs.len() > events.len() {
        return Ok(Err(format!(
            "it is further along in {} ({} events, {} here): copy the other way",
            to.location(),
            theirs.len(),
            events.len()
        )));
    }
    // Plans first, the goal's log last: a goal whose log is there whole has its plans.
    for plan in from.plans(goal)? {
        let plan_events = from.plan_events(goal, &plan)?;
        let mut contents = Vec::new();
        for name in from.plan_files(goal, &plan)? {
            if let Some(bytes) = from.plan_file(goal, &plan, &name)? {
                contents.push((name, bytes));
            }
        }
        to.import_plan(goal, &plan, &plan_events, &contents)?;
    }
    to.freeze(goal, &bytes)?;
    let missing = &events[theirs.len()..];
    for event in missing {
        to.import(goal, event)?;
    }
    Ok(Ok(missing.len()))
}

fn verify(flag: Option<PathBuf>) -> anyhow::Result<u8> {
    let store = store(flag)?;
    let (registry, _) = open_registry(None, false)?;
    let templates = RegistryTemplates::new(&registry, String::new());
    let goals = Goals {
        store: &*store,
        templates: &templates,
        by: String::new(),
        now: || 0,
    };
    let (mut fine, mut problems) = (0, 0);
    for goal in store.goals()? {
        let checked = goals.load(&goal).map(drop).and_then(|()| {
            for plan in store.plans(&goal)? {
                store.plan_events(&goal, &plan)?;
            }
            Ok(())
        });
        match checked {
            Ok(()) => fine += 1,
            Err(e) => {
                problems += 1;
                eprintln!("problem {}: {}", sanitize(&goal), sanitize(&e.to_string()));
            }
        }
    }
    eprintln!(
        "verified {fine} goal{} in {}: {}",
        if fine == 1 { "" } else { "s" },
        store.location(),
        if problems == 0 {
            "ok".to_owned()
        } else {
            format!("{problems} problem{}", if problems == 1 { "" } else { "s" })
        }
    );
    Ok(if problems == 0 {
        exit::OK
    } else {
        exit::FINDINGS
    })
}
