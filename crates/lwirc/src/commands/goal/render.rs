//! What the goal commands print: progress lines of `goal run`, `tick` and `serve`, the
//! findings of a refused goal file or proposal, `goal list`'s table and rows, and `goal
//! show`'s page.

use lwir_goals::goal::Replanned;
use lwir_goals::projection::{Projection, WorkView};
use lwir_render::terminal::{excerpt, sanitize};
use lwir_render::{File, Report};
use lwir_spec::SpannedDocument;

use super::super::{ColorChoice, Format};

/// Progress lines of `goal run`, `tick` and `serve` on standard error.
pub(super) struct Progress {
    pub(super) quiet: bool,
}

impl lwir_goals::run::Observer for Progress {
    fn progress(&mut self, goal: &str, progress: lwir_goals::run::Progress<'_>) {
        use lwir_goals::run::Progress as P;
        if self.quiet {
            return;
        }
        let line = match progress {
            P::Interrupted { work, attempt } => {
                format!(
                    "attempt {attempt} of {work} lost its runner (an earlier run stopped, or its answer could not be recorded): recorded as interrupted"
                )
            }
            P::Dispatched { work, key, attempt } => {
                format!("{key}: attempt {attempt} dispatched ({work})")
            }
            P::Finished {
                key,
                attempt,
                succeeded: true,
                run,
                ..
            } => format!("{key}: attempt {attempt} succeeded{}", run_of(run)),
            P::Finished {
                key,
                attempt,
                error,
                run,
                ..
            } => format!(
                "{key}: attempt {attempt} failed{}: {}",
                run_of(run),
                excerpt(error.unwrap_or("(no error given)"), 300)
            ),
            P::Replanned(outcome) => match outcome {
                Replanned::Applied { plan, generation } => {
                    format!("replan {plan}: applied, generation {generation}")
                }
                Replanned::AwaitingReview { plan, .. } => {
                    format!("replan {plan}: a valid plan waits for review")
                }
                Replanned::Attention { plan, rationale } => {
                    format!(
                        "replan {plan}: the planner asked for attention: {}",
                        excerpt(rationale, 300)
                    )
                }
                Replanned::Rejected { plan, feedback } => {
                    format!(
                        "replan {plan}: rejected by the reviewer: {}",
                        excerpt(feedback, 300)
                    )
                }
                Replanned::Failed { plan, message, .. } => {
                    format!("replan {plan}: failed: {}", excerpt(message, 300))
                }
            },
            P::Adapted(outcome) => {
                use lwir_goals::adapt::Adapted as A;
                match outcome {
                    A::NotTriggered(_) => return,
                    A::Kept { plan } => format!("adaptation {plan}: the planner kept the plan"),
                    A::Revised {
                        plan,
                        generation,
                        obsoleted,
                    } => {
                        format!(
                            "adaptation {plan}: the remaining plan was revised, generation {generation} ({obsoleted} item(s) obsolete)"
                        )
                    }
                    A::AwaitingReview { plan } => {
                        format!("adaptation {plan}: a revision waits for review; dispatch pauses")
                    }
                    A::Attention { plan, rationale } => {
                        format!(
                            "adaptation {plan}: the planner asked for attention ({}); the plan goes on",
                            excerpt(rationale, 300)
                        )
                    }
                    A::Failed { plan, message, .. } => {
                        format!(
                            "adaptation {plan}: failed ({}); the plan goes on",
                            excerpt(message, 300)
                        )
                    }
                }
            }
            P::NotRecorded { work, reason } => {
                format!("{work}: its answer was not recorded: {reason}")
            }
        };
        eprintln!("lwirc: {goal}: {}", sanitize(&line));
    }
}

pub(super) fn stderr_choice(color: ColorChoice) -> ColorChoice {
    match color {
        ColorChoice::Auto if super::super::stderr_color() => ColorChoice::Always,
        ColorChoice::Auto => ColorChoice::Never,
        other => other,
    }
}

pub(super) fn render(
    format: Format,
    color: ColorChoice,
    name: &str,
    doc: &SpannedDocument,
    findings: &[lwir_spec::Finding],
) -> String {
    let report = Report::of_file(
        findings,
        File {
            name,
            bytes: doc.source(),
            document: Some(doc),
        },
    );
    format.render(report, color)
}

pub(super) fn list_row(p: &Projection) -> serde_json::Value {
    let mut row = serde_json::json!({
        "goal": p.goal,
        "name": p.name,
        "status": p.status,
        "generation": p.generation,
        "attempts": p.attempts,
        "replans": p.replans,
        "reason": p.reason,
        "fingerprint": p.fingerprint,
    });
    if let Some(c) = &p.replan_consumption {
        row["replan_consumption"] = serde_json::to_value(c).unwrap_or_default();
    }
    row
}

pub(super) fn consumption_text(p: &Projection) -> String {
    p.replan_consumption.map_or_else(
        || "-".to_owned(),
        |c| {
            format!(
                "reviewer_rejection {}, planner_no_proposal {}",
                c.reviewer_rejection, c.planner_no_proposal
            )
        },
    )
}

pub(super) fn list_table(shown: &[Projection]) -> String {
    if shown.is_empty() {
        return "no goals (`lwirc goal create GOAL.json` creates one)\n".to_owned();
    }
    let rows: Vec<[String; 6]> = shown
        .iter()
        .map(|p| {
            [
                p.goal.clone(),
                p.status.as_str().to_owned(),
                p.generation.to_string(),
                format!("{}/{}", p.attempts.used, p.attempts.max),
                format!("{}/{}", p.replans.used, p.replans.max),
                consumption_text(p),
            ]
        })
        .collect();
    let header = [
        "GOAL",
        "STATUS",
        "GEN",
        "ATTEMPTS",
        "REPLANS",
        "REPLAN CONSUMPTION",
    ];
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<width$}  ", width = widths[i]));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(header.to_vec(), &mut out);
    for row in &rows {
        line(row.iter().map(String::as_str).collect(), &mut out);
    }
    for p in shown {
        if matches!(
            p.status.as_str(),
            "exhausted" | "attention" | "awaiting-review"
        ) {
            out.push_str(&format!(
                "{}: {}\n",
                p.goal,
                sanitize(&excerpt(&p.reason, 400))
            ));
        }
    }
    out
}

pub(super) fn show_human(p: &Projection) -> String {
    let mut out = String::new();
    out.push_str(&format!("goal {} ({})\n", p.goal, sanitize(&p.name)));
    out.push_str(&format!(
        "  objective: {}\n",
        sanitize(&excerpt(&p.objective, 400))
    ));
    out.push_str(&format!("  status: {}\n", p.status.as_str()));
    out.push_str(&format!("  reason: {}\n", sanitize(&p.reason)));
    if let Some(root) = &p.active_root {
        out.push_str(&format!(
            "  generation {}, root `{}` ({})\n",
            p.generation, root.key, root.id
        ));
    }
    out.push_str(&format!(
        "  attempts {}/{} · replans {}/{} · planned items {}/{}",
        p.attempts.used,
        p.attempts.max,
        p.replans.used,
        p.replans.max,
        p.planned_items.used,
        p.planned_items.max
    ));
    if p.adaptations.max > 0 {
        out.push_str(&format!(
            " · adaptations {}/{}",
            p.adaptations.used, p.adaptations.max
        ));
    }
    out.push('\n');
    if let Some(c) = &p.replan_consumption {
        out.push_str(&format!(
            "  replan consumption: reviewer_rejection {}, planner_no_proposal {}\n",
            c.reviewer_rejection, c.planner_no_proposal
        ));
    }
    if let Some(c) = &p.cancelled {
        out.push_str(&format!("  cancelled by {} at {}\n", sanitize(&c.by), c.at));
    }
    out.push_str(&format!("\nwork of generation {}:\n", p.generation));
    work_table(&p.work, &mut out);
    let superseded: Vec<WorkView> = p
        .governed_work
        .iter()
        .filter(|w| !p.work.iter().any(|a| a.id == w.id))
        .cloned()
        .collect();
    if !superseded.is_empty() {
        out.push_str("\noutside the active generation (kept, not dispatched):\n");
        work_table(&superseded, &mut out);
    }
    out.push_str("\nplans:\n");
    for plan in &p.plans {
        out.push_str(&format!("  {} {} {}", plan.id, plan.kind, plan.status));
        if !plan.charged && plan.kind == "replan" {
            out.push_str(" (not charged)");
        }
        if let Some(root) = &plan.root {
            out.push_str(&format!(" · root `{}`", sanitize(root)));
        }
        if let Some(r) = &plan.receipt {
            out.push_str(&format!(
                " · receipt: {} by {} {}",
                r.verdict,
                r.reviewer,
                sanitize(&r.by)
            ));
        }
        out.push('\n');
        if let Some(reason) = &plan.reason {
            out.push_str(&format!("      {}\n", sanitize(&excerpt(reason, 600))));
        }
    }
    out
}

/// ` (run RUN)` for an attempt that was a run.
fn run_of(run: Option<&str>) -> String {
    run.map_or(String::new(), |r| format!(" (run {r})"))
}

fn work_table(work: &[WorkView], out: &mut String) {
    if work.is_empty() {
        out.push_str("  (none)\n");
        return;
    }
    for w in work {
        let status = serde_json::to_value(w.status).unwrap_or_default();
        out.push_str(&format!(
            "  {:<28} {:<12} {:<16} {:<10} {}/{} attempt(s)\n",
            w.id,
            sanitize(&w.key),
            sanitize(&w.template),
            status.as_str().unwrap_or(""),
            w.attempts,
            w.max_attempts
        ));
        for e in &w.errors {
            out.push_str(&format!("      {}\n", sanitize(&excerpt(e, 300))));
        }
        for r in &w.runs {
            out.push_str(&format!("      attempt {}: run {}\n", r.attempt, r.run));
        }
    }
}
