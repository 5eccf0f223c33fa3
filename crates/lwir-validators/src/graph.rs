//! Graph and bounds: unique step ids, `after` entries that resolve, no dependency cycles,
//! the workflow name, and the limits of the definition (step count, parallelism, loop
//! iterations) and of LWIR itself (`code.run` body size).

use std::sync::Arc;

use foldhash::HashMap;

use lwir_spec::document::Node;
use lwir_spec::ir::{Limits, MAX_CODE_BODY_BYTES, Step, StepKind};
use lwir_spec::{Applicability, Code, Finding, Fix, Span, pointer};

use crate::expr::Reference;
use crate::{Context, head, replace_at, unknown_name};

/// A step with an id, as a node of the dependency graph.
struct Vertex<'d> {
    id: &'d str,
    /// The `id` value's span, where duplicate findings point.
    id_span: Span,
    /// The step's pointer.
    step: &'d str,
    /// Its edges: its `after` entries (this range of the graph's list of them), then the
    /// data references of its expressions (this range of the graph's list of those).
    after: std::ops::Range<usize>,
    data: std::ops::Range<usize>,
}

/// How many vertices either side of the last reference's the next reference's step is looked
/// for before its pointer is (a `map`'s `result` reads after the steps of its body).
const NEAR: usize = 16;

/// The vertices and their edges, each vertex's next to each other in one list of each kind
/// (a large draft has hundreds of thousands of edges: one list per vertex would be as many
/// allocations, and a data reference is kept as it is rather than copied into an edge).
struct Graph<'d> {
    vertices: Vec<Vertex<'d>>,
    after: Vec<Edge<'d>>,
    data: Vec<(usize, &'d Reference)>,
}

impl<'d> Graph<'d> {
    /// Edge `i` of vertex `v`: its `after` entries first, then its data references.
    fn edge(&self, v: usize, i: usize) -> Option<Edge<'d>> {
        let vertex = &self.vertices[v];
        match i.checked_sub(vertex.after.len()) {
            None => Some(self.after[vertex.after.start + i]),
            Some(d) if d < vertex.data.len() => {
                let (_, r) = self.data[vertex.data.start + d];
                Some(Edge {
                    to: r.to.as_str(),
                    at: Place::Data(&r.pointer),
                    span: r.span,
                })
            }
            Some(_) => None,
        }
    }
}

/// An edge of the graph: the id it names, where it is written and its bytes.
#[derive(Clone, Copy)]
struct Edge<'d> {
    to: &'d str,
    at: Place<'d>,
    span: Span,
}

/// Where an edge is written; its pointer is made only for a finding.
#[derive(Clone, Copy)]
enum Place<'d> {
    /// Entry `.1` of the `after` of the step at `.0`.
    After(&'d str, usize),
    /// A data reference, at this pointer.
    Data(&'d str),
}

impl Place<'_> {
    fn pointer(self) -> String {
        match self {
            Place::After(step, i) => pointer::join_index(&pointer::join(step, "after"), i),
            Place::Data(at) => at.to_owned(),
        }
    }
}

/// Checks the graph of the draft of `cx`, with the data references of its expressions
/// as edges too: bounds, repeated ids, `after` entries naming no step, cycles, the
/// workflow name and the step limit.
pub(crate) fn check<'a>(
    cx: &'a Context<'_>,
    references: impl Iterator<Item = &'a Reference> + Clone,
    out: &mut Vec<Finding>,
) {
    let mut vertices: Vec<Vertex<'a>> = Vec::new();
    // The `after` entries of the vertices, in their order (each vertex's `edges` is first
    // its range here).
    let mut after_edges: Vec<Edge<'a>> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::default();
    let mut count = 0usize;
    let mut first_over: Option<(String, Span)> = None;
    // `after` entries of steps that are not graph vertices (no id, or a repeated one).
    let mut unplaced: Vec<Edge<'a>> = Vec::new();
    let limits = cx.definition.as_ref().map(|(_, d)| d.limits);

    cx.draft.walk(&mut |step| {
        count += 1;
        if let Some(limits) = limits
            && count as u64 == limits.max_steps + 1
        {
            first_over = Some((step.pointer.clone(), head(step.node.span)));
        }
        bounds(step, limits, out);
        let after = step
            .field("after")
            .and_then(Node::as_array)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .filter_map(|(i, n)| {
                Some(Edge {
                    to: n.as_str()?,
                    at: Place::After(&step.pointer, i),
                    span: n.span,
                })
            });
        let Some((id_node, id)) = step.field("id").and_then(|n| Some((n, n.as_str()?))) else {
            unplaced.extend(after);
            return;
        };
        if let Some(&first) = index.get(id) {
            let first: &Vertex<'_> = &vertices[first];
            out.push(
                Finding::new(
                    Code::DuplicateStepId,
                    step.pointer_to("id"),
                    id_node.span,
                    format!("step id `{id}` is used twice"),
                )
                .with_help("step ids must be unique in the whole document, nested steps included")
                .with_related(
                    pointer::join(first.step, "id"),
                    first.id_span,
                    "first used here",
                ),
            );
            // Not a vertex of its own, but its `after` entries must still name steps.
            unplaced.extend(after);
            return;
        }
        index.insert(id, vertices.len());
        let start = after_edges.len();
        after_edges.extend(after);
        vertices.push(Vertex {
            id,
            id_span: id_node.span,
            step: &step.pointer,
            after: start..after_edges.len(),
            data: 0..0,
        });
    });

    dangling_after(&vertices, &after_edges, &unplaced, &index, out);
    // Data references are edges too: a step waits for the steps whose outputs it reads.
    // A step's references are next to each other and share its pointer: it is looked up
    // once for them, among the vertices near the last one first (the references come in
    // nearly the order of the walk), then by pointer.
    let mut by_pointer: Option<HashMap<&str, usize>> = None;
    let mut last: Option<(&Arc<str>, Option<usize>)> = None;
    let mut near = 0usize;
    let mut data: Vec<(usize, &Reference)> = Vec::new();
    for r in references {
        let from = match last {
            Some((step, from)) if Arc::ptr_eq(step, &r.from_step) => from,
            _ => {
                let pointer = &*r.from_step;
                let around = near.saturating_sub(NEAR)..(near + NEAR).min(vertices.len());
                let from = around
                    .clone()
                    .find(|&v| vertices[v].step == pointer)
                    .or_else(|| {
                        by_pointer
                            .get_or_insert_with(|| {
                                vertices
                                    .iter()
                                    .enumerate()
                                    .map(|(i, v)| (v.step, i))
                                    .collect()
                            })
                            .get(pointer)
                            .copied()
                    });
                if let Some(v) = from {
                    near = v;
                }
                last = Some((&r.from_step, from));
                from
            }
        };
        if let Some(from) = from {
            data.push((from, r));
        }
    }
    drop(by_pointer);
    // In the order of the vertices, each one's in document order (a stable sort of a list
    // nearly in order already).
    data.sort_by_key(|&(v, _)| v);
    let mut at = 0;
    for (v, vertex) in vertices.iter_mut().enumerate() {
        let start = at;
        while data.get(at).is_some_and(|&(w, _)| w == v) {
            at += 1;
        }
        vertex.data = start..at;
    }
    let graph = Graph {
        vertices,
        after: after_edges,
        data,
    };
    cycles(&graph, &index, out);

    if let Some((_, def)) = &cx.definition {
        workflow_name(cx, def.name(), out);
        if let (Some(limits), Some((at, span))) = (limits, first_over) {
            let steps = cx.draft.root.member("steps");
            out.push(
                Finding::new(
                    Code::TooManySteps,
                    "/steps",
                    steps.map_or(span, |m| head(m.value.span)),
                    format!(
                        "the draft has {count} step{}; the definition allows at most {}",
                        if count == 1 { "" } else { "s" },
                        limits.max_steps
                    ),
                )
                .with_help("nested steps count too; use `map` for work repeated per item")
                .with_related(
                    at,
                    span,
                    format!("step {} is over the limit", limits.max_steps + 1),
                ),
            );
        }
    }
}

fn bounds(step: &Step<'_>, limits: Option<Limits>, out: &mut Vec<Finding>) {
    match step.kind {
        Some(StepKind::CodeRun) => {
            if let Some(body) = step.field("body")
                && let Some(text) = body.as_str()
                && text.len() > MAX_CODE_BODY_BYTES
            {
                out.push(
                    Finding::new(
                        Code::CodeBodyTooLarge,
                        step.pointer_to("body"),
                        head(body.span),
                        format!(
                            "`code.run` body is {} bytes; the limit is {MAX_CODE_BODY_BYTES}",
                            text.len()
                        ),
                    )
                    .with_help("keep bodies small and reviewable; larger logic belongs in a tool"),
                );
            }
        }
        Some(StepKind::Map) => {
            if let Some(limits) = limits
                && let Some(finding) = over_limit(
                    step,
                    "max_parallel",
                    limits.max_parallel,
                    Code::ParallelismOverLimit,
                )
            {
                out.push(finding);
            }
        }
        Some(StepKind::Loop) => {
            if let Some(limits) = limits
                && let Some(finding) = over_limit(
                    step,
                    "max_iterations",
                    limits.max_loop_iterations,
                    Code::LoopIterationsOverLimit,
                )
            {
                out.push(finding.with_help(
                    "the loop may then stop before `until` holds; check that the bound still suffices",
                ));
            }
        }
        _ => {}
    }
}

/// `code` when the step's `field` (a positive integer) is above the definition's `limit`,
/// with the fix to the limit: the only valid bound nearest the author's, so certain.
fn over_limit(step: &Step<'_>, field: &str, limit: u64, code: Code) -> Option<Finding> {
    let node = step.field(field)?;
    let n = node.as_i64().filter(|&n| n > 0 && n as u64 > limit)?;
    let at = step.pointer_to(field);
    Some(
        Finding::new(
            code,
            at.clone(),
            node.span,
            format!("`{field}` is {n}; the definition allows at most {limit}"),
        )
        .with_fix(Fix::replace(Applicability::MachineApplicable, at, limit)),
    )
}

fn dangling_after(
    vertices: &[Vertex<'_>],
    after_edges: &[Edge<'_>],
    unplaced: &[Edge<'_>],
    index: &HashMap<&str, usize>,
    out: &mut Vec<Finding>,
) {
    let entries = vertices
        .iter()
        .flat_map(|v| {
            after_edges[v.after.clone()]
                .iter()
                .map(move |a| (Some(v.id), a))
        })
        .chain(unplaced.iter().map(|a| (None, a)));
    for (own_id, edge) in entries {
        let target = edge.to;
        if index.contains_key(target) {
            continue;
        }
        let at = edge.at.pointer();
        let mut finding = Finding::new(
            Code::DanglingAfter,
            at.clone(),
            edge.span,
            format!("`after` names `{target}`, which is not a step"),
        );
        let ids = vertices
            .iter()
            .map(|v| v.id)
            .filter(|id| Some(*id) != own_id);
        finding = unknown_name(finding, target, ids, replace_at(&at), |_| {
            "remove it, or name the step that must finish first".to_owned()
        });
        out.push(finding);
    }
}

/// Reports each cycle of `after` edges once, with its path, by an iterative depth-first
/// search (drafts can be deep and large; recursion would not be safe).
fn cycles(graph: &Graph<'_>, index: &HashMap<&str, usize>, out: &mut Vec<Finding>) {
    let vertices = &graph.vertices;
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut mark = vec![Mark::New; vertices.len()];
    let mut in_reported_cycle = vec![false; vertices.len()];
    for root in 0..vertices.len() {
        if mark[root] != Mark::New {
            continue;
        }
        // (vertex, next edge to follow)
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        mark[root] = Mark::Open;
        while let Some(&mut (v, ref mut edge)) = stack.last_mut() {
            let Some(Edge { to: target, .. }) = graph.edge(v, *edge) else {
                mark[v] = Mark::Done;
                stack.pop();
                continue;
            };
            *edge += 1;
            let Some(&w) = index.get(target) else {
                continue;
            };
            match mark[w] {
                Mark::New => {
                    mark[w] = Mark::Open;
                    stack.push((w, 0));
                }
                Mark::Open => {
                    let start = stack.iter().position(|&(u, _)| u == w).unwrap_or(0);
                    // Each vertex on the path with the edge it follows to the next.
                    let path: Vec<(usize, usize)> =
                        stack[start..].iter().map(|&(u, e)| (u, e - 1)).collect();
                    // A cycle made only of vertices already shown in cycles adds nothing.
                    if path.iter().any(|&(u, _)| !in_reported_cycle[u]) {
                        for &(u, _) in &path {
                            in_reported_cycle[u] = true;
                        }
                        out.extend(cycle_finding(graph, &path));
                    }
                }
                _ => {}
            }
        }
    }
}

/// The finding of the cycle `path` (each vertex with the index of the edge it follows);
/// `None` only if an edge of it were not in the graph, which the search never makes.
fn cycle_finding(graph: &Graph<'_>, path: &[(usize, usize)]) -> Option<Finding> {
    let vertices = &graph.vertices;
    let mut names: Vec<&str> = path.iter().map(|&(u, _)| vertices[u].id).collect();
    names.push(vertices[path[0].0].id);
    let (last, last_edge) = *path.last().unwrap_or(&path[0]);
    let edge = graph.edge(last, last_edge)?;
    let mut finding = Finding::new(
        Code::DependencyCycle,
        edge.at.pointer(),
        edge.span,
        format!("dependency cycle: {}", names.join(" → ")),
    )
    .with_help("no step of a cycle can ever start; remove one of these dependencies");
    for &(u, e) in &path[..path.len() - 1] {
        let Some(Edge {
            to: target,
            at,
            span,
        }) = graph.edge(u, e)
        else {
            continue;
        };
        let how = if e < vertices[u].after.len() {
            "runs after"
        } else {
            "reads the output of"
        };
        finding = finding.with_related(
            at.pointer(),
            span,
            format!("`{}` {how} `{target}`", vertices[u].id),
        );
    }
    Some(finding)
}

fn workflow_name(cx: &Context<'_>, expected: Option<&str>, out: &mut Vec<Finding>) {
    let (Some(expected), Some(node)) = (expected, cx.draft.workflow()) else {
        return;
    };
    let Some(name) = node.as_str() else { return };
    if name != expected {
        out.push(
            Finding::new(
                Code::WorkflowNameMismatch,
                "/workflow",
                node.span,
                format!("the draft is for workflow `{name}`, but the definition is `{expected}`"),
            )
            .with_help("check that the right definition was passed with `-d`")
            // The definition allows exactly one value here.
            .with_fix(Fix::replace(
                Applicability::MachineApplicable,
                "/workflow",
                expected,
            )),
        );
    }
}
