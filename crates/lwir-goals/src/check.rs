//! The host's checks of a plan: generation 0 in a goal file, or the items of a replan
//! proposal. Every problem is a finding pointing into the document the plan was read from,
//! all of them at once (`crates/lwir-spec/README.md`, "Goals", lists which code is which
//! invariant).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use lwir_spec::expr::{Expr, ExprKind, Part, StringValue, parse_string_value};
use lwir_spec::suggest::suggest;
use lwir_spec::{Code, Finding, Fix, Node, Span, SpannedDocument};
use lwir_validators::types::{ObjectTy, Prop, Ty};

use crate::catalog::Template;
use crate::file::{ItemSpec, TemplateRef};

/// An item of the active generation, as a proposal may depend on it.
#[derive(Clone, Debug)]
pub struct Active {
    /// Its key.
    pub key: String,
    /// Its work id.
    pub id: String,
    /// Its template's name.
    pub template: String,
}

/// The bounds a proposal is checked against (invariant 5), as they stand before it.
#[derive(Clone, Debug, Default)]
pub struct Bounds {
    /// `max_items_per_plan`.
    pub max_items_per_plan: u32,
    /// `max_planned_items`, and how many items earlier replans planned.
    pub max_planned_items: u32,
    /// Items planned by earlier replans that were applied.
    pub planned_items: u32,
    /// Replans (or, for an adaptation, adaptations) the goal allows.
    pub max_replans: u32,
    /// Replans used, this one included.
    pub replans_used: u32,
    /// `max_total_attempts` and the attempts used over every generation.
    pub max_total_attempts: u32,
    /// Attempts used.
    pub attempts_used: u32,
    /// Seconds of `max_wall_time_s` left (0: spent).
    pub wall_time_left_s: u64,
    /// Whether the plan is an adaptation (`max_replans` then holds `max_adaptations`).
    pub adaptation: bool,
}

/// What the plan is checked as.
#[derive(Clone, Debug)]
pub enum Mode {
    /// Generation 0 of a goal file (items at `/work`).
    Initial,
    /// A replan proposal (items at `/items`), with the active generation and the bounds.
    Proposal {
        /// The active generation's items.
        active: Vec<Active>,
        /// The bounds.
        bounds: Bounds,
    },
}

/// Everything a check needs.
pub struct Context<'a> {
    /// The document the plan was read from (the goal file, or the planner's answer).
    pub document: &'a SpannedDocument,
    /// The goal's catalog, by template name.
    pub catalog: &'a BTreeMap<String, TemplateRef>,
    /// The catalog's templates as read from the registry, by name (those that could be).
    pub templates: &'a BTreeMap<String, Template>,
    /// The goal input.
    pub goal_input: &'a serde_json::Value,
    /// Generation 0 or a proposal.
    pub mode: Mode,
}

/// One item of a plan that passed every check.
#[derive(Clone, Debug, PartialEq)]
pub struct Planned {
    /// Its key.
    pub key: String,
    /// Its template's name.
    pub template: String,
    /// Its input, unresolved.
    pub input: serde_json::Value,
    /// The keys it depends on: its `after` entries, then those its input reads, each once.
    pub depends_on: Vec<String>,
}

/// A plan that passed every check: its items in order, and its root's key.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The items.
    pub items: Vec<Planned>,
    /// The root's key.
    pub root: String,
}

/// Checks `items` and `root` (invariants 1–5 and 7); the plan, when there is no error.
pub fn check(cx: &Context<'_>, items: &[ItemSpec], root: &str) -> (Vec<Finding>, Option<Plan>) {
    let base = match cx.mode {
        Mode::Initial => "/work",
        Mode::Proposal { .. } => "/items",
    };
    let active: &[Active] = match &cx.mode {
        Mode::Initial => &[],
        Mode::Proposal { active, .. } => active,
    };
    let mut out = Vec::new();
    let at = |i: usize, rest: &str| format!("{base}/{i}{rest}");
    let span = |p: &str| cx.document.span_of(p).unwrap_or_default();

    // Keys: unique in the plan, and (a proposal) not those of active work.
    let mut first: HashMap<&str, usize> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let p = at(i, "/key");
        if let Some(&j) = first.get(item.key.as_str()) {
            out.push(
                Finding::new(
                    Code::DuplicateWorkKey,
                    p.clone(),
                    span(&p),
                    format!("work key `{}` is used twice", item.key),
                )
                .with_related(
                    at(j, "/key"),
                    span(&at(j, "/key")),
                    "first used here",
                ),
            );
        } else if active.iter().any(|a| a.key == item.key) {
            out.push(
                Finding::new(
                    Code::DuplicateWorkKey,
                    p.clone(),
                    span(&p),
                    format!("work key `{}` is already an item of the active generation", item.key),
                )
                .with_help("a proposed item needs a new key; depend on the existing item instead of repeating it"),
            );
        } else {
            first.insert(&item.key, i);
        }
    }

    // Templates (invariant 1).
    for (i, item) in items.iter().enumerate() {
        if !cx.catalog.contains_key(&item.template) {
            let p = at(i, "/template");
            let mut finding = Finding::new(
                Code::UnknownTemplate,
                p.clone(),
                span(&p),
                format!("template `{}` is not in the goal's catalog", item.template),
            );
            match suggest(&item.template, cx.catalog.keys().map(String::as_str)) {
                Some((name, applicability)) => {
                    finding = finding
                        .with_help(format!("did you mean `{name}`?"))
                        .with_fix(Fix::replace(applicability, &p, name));
                }
                None => {
                    finding = finding.with_help(format!(
                        "the catalog has {}",
                        names(cx.catalog.keys().map(String::as_str))
                    ));
                }
            }
            out.push(finding);
        }
    }

    // Dependencies (invariant 2) and inputs (invariant 7).
    let mut depends: Vec<Vec<String>> = Vec::with_capacity(items.len());
    // Every key an item names, valid or not: reachability follows them all, so that an
    // item behind a misplaced `after` is not also reported unreachable.
    let mut edges: Vec<Vec<String>> = Vec::with_capacity(items.len());
    // Each template's output type, made once (not once per item that can read it).
    let outputs: BTreeMap<&str, Ty> = cx
        .templates
        .iter()
        .map(|(name, t)| (name.as_str(), t.output_type()))
        .collect();
    let output_of = |template: Option<&str>| {
        template
            .and_then(|t| outputs.get(t))
            .cloned()
            .unwrap_or(Ty::Any)
    };
    let inputs: BTreeMap<&str, Ty> = cx
        .templates
        .iter()
        .map(|(name, t)| (name.as_str(), t.input_type()))
        .collect();
    let active_keys: BTreeMap<&str, &str> = active
        .iter()
        .map(|a| (a.key.as_str(), a.template.as_str()))
        .collect();
    // The items before the one being checked, by key: the first item of each key, as a
    // search of the list in order would find it.
    let mut earlier_keys: BTreeMap<&str, &str> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            let before = &items[i - 1];
            earlier_keys
                .entry(before.key.as_str())
                .or_insert(before.template.as_str());
        }
        let earlier: Vec<&str> = if item.after.iter().any(|k| {
            !earlier_keys.contains_key(k.as_str()) && !active_keys.contains_key(k.as_str())
        }) {
            // Only for a finding's suggestions.
            items[..i].iter().map(|x| x.key.as_str()).collect()
        } else {
            Vec::new()
        };
        let known = |k: &str| earlier_keys.contains_key(k) || active_keys.contains_key(k);
        let mut deps: Vec<String> = Vec::new();
        for (j, key) in item.after.iter().enumerate() {
            if known(key) {
                if !deps.contains(key) {
                    deps.push(key.clone());
                }
                continue;
            }
            let p = at(i, &format!("/after/{j}"));
            let message = if *key == item.key {
                format!("work item `{key}` depends on itself")
            } else if items.iter().any(|x| x.key == *key) {
                format!("`{key}` is a later item; an item may depend only on items before it")
            } else {
                format!(
                    "`{key}` names no earlier item{}",
                    if active.is_empty() {
                        ""
                    } else {
                        " and no active work"
                    }
                )
            };
            let mut finding = Finding::new(Code::UnknownDependency, p.clone(), span(&p), message);
            let candidates = earlier
                .iter()
                .copied()
                .chain(active.iter().map(|a| a.key.as_str()));
            if let Some((name, applicability)) = suggest(key, candidates) {
                finding = finding
                    .with_help(format!("did you mean `{name}`?"))
                    .with_fix(Fix::replace(applicability, &p, name));
            }
            out.push(finding);
        }
        let input_pointer = at(i, "/input");
        if let Some(node) = cx.document.root().at(&input_pointer) {
            // `work` holds the items this one may read: earlier items and active work.
            // When the input reads only keys it names, and all of them are there, the
            // type of `work` with just those keys types it the same: the others are never
            // looked at (and building every earlier item's type for every item would be
            // quadratic in the plan).
            let (named, whole) = work_use(node);
            let mut visible: Vec<(String, Ty)> = Vec::new();
            if !whole && named.iter().all(|k| known(k)) {
                for key in &named {
                    let template = earlier_keys
                        .get(key.as_str())
                        .or_else(|| active_keys.get(key.as_str()))
                        .copied();
                    visible.push((key.clone(), output_of(template)));
                }
            } else {
                let mut seen = BTreeSet::new();
                for x in &items[..i] {
                    if seen.insert(x.key.as_str()) {
                        let template = earlier_keys.get(x.key.as_str()).copied();
                        visible.push((x.key.clone(), output_of(template)));
                    }
                }
                for a in active {
                    visible.push((a.key.clone(), output_of(Some(&a.template))));
                }
            }
            let variables = [
                ("goal", goal_type(cx.goal_input)),
                ("work", work_type(&visible)),
            ];
            let (ty, findings) =
                lwir_validators::expr::type_of_value(cx.document, node, &input_pointer, &variables);
            out.extend(findings);
            if let Some(target) = inputs.get(item.template.as_str()) {
                // At the exact value: each member of an input object against its property,
                // as a literal tool argument is; the whole input only when no member is at
                // fault (a missing property, say).
                let members = member_flows(&ty, target, node, &input_pointer, item);
                if members.is_empty() {
                    out.extend(lwir_validators::compat::flow_finding(
                        &ty,
                        target,
                        &input_pointer,
                        node.span,
                        || {
                            (
                                format!("the input of work item `{}`", item.key),
                                format!("the input schema of template `{}`", item.template),
                            )
                        },
                    ));
                } else {
                    out.extend(members);
                }
            }
            edges.push(item.after.iter().chain(&named).cloned().collect());
            for key in named {
                if known(&key) && !deps.contains(&key) {
                    deps.push(key);
                }
            }
        }
        if edges.len() == depends.len() {
            edges.push(item.after.clone());
        }
        depends.push(deps);
    }

    // The root (invariant 3).
    let root_at = cx.document.span_of("/root").unwrap_or_default();
    match items.iter().position(|x| x.key == root) {
        None => {
            let message = match cx.mode {
                Mode::Initial => format!("the root `{root}` is not a work item of the goal"),
                Mode::Proposal { .. } if active.iter().any(|a| a.key == root) => format!(
                    "the root `{root}` is active work, not a new item; a new generation needs a new root"
                ),
                Mode::Proposal { .. } => {
                    format!("the root `{root}` is not one of the proposed items")
                }
            };
            let mut finding = Finding::new(Code::RootNotNew, "/root", root_at, message);
            if let Some((name, applicability)) = suggest(root, items.iter().map(|x| x.key.as_str()))
            {
                finding = finding
                    .with_help(format!("did you mean `{name}`?"))
                    .with_fix(Fix::replace(applicability, "/root", name));
            }
            out.push(finding);
        }
        Some(r) => {
            if let Some(template) = cx.catalog.get(&items[r].template)
                && !template.root
            {
                out.push(
                    Finding::new(
                        Code::RootNotRootCapable,
                        "/root",
                        root_at,
                        format!(
                            "the root `{root}` runs template `{}`, which may not be a plan root",
                            items[r].template
                        ),
                    )
                    .with_related(
                        at(r, "/template"),
                        span(&at(r, "/template")),
                        "its template",
                    )
                    .with_help(format!(
                        "root-capable templates: {}",
                        names(
                            cx.catalog
                                .iter()
                                .filter(|(_, t)| t.root)
                                .map(|(n, _)| n.as_str())
                        )
                    )),
                );
            }
            // Reachability (invariant 4).
            let index: HashMap<&str, usize> = items
                .iter()
                .enumerate()
                .map(|(i, x)| (x.key.as_str(), i))
                .collect();
            let mut reached = vec![false; items.len()];
            let mut stack = vec![r];
            while let Some(i) = stack.pop() {
                if std::mem::replace(&mut reached[i], true) {
                    continue;
                }
                for dep in &edges[i] {
                    if let Some(&j) = index.get(dep.as_str()) {
                        stack.push(j);
                    }
                }
            }
            for (i, item) in items.iter().enumerate() {
                if !reached[i] && first.get(item.key.as_str()) == Some(&i) {
                    let p = at(i, "");
                    out.push(
                        Finding::new(
                            Code::UnreachableWork,
                            p.clone(),
                            cx.document.key_span_of(&at(i, "/key")).map_or_else(|| span(&p), |_| span(&at(i, "/key"))),
                            format!("work item `{}` is not reachable from the root `{root}`", item.key),
                        )
                        .with_help(format!(
                            "make `{root}` (or an item it depends on) run after `{}`, or leave the item out",
                            item.key
                        )),
                    );
                }
            }
        }
    }

    // Bounds (invariant 5).
    if let Mode::Proposal { bounds: b, .. } = &cx.mode {
        let n = items.len() as u32;
        let whole = cx.document.root().span;
        let items_span = cx.document.span_of("/items").unwrap_or(whole);
        let mut bound = |span: Span, pointer: &str, message: String, help: &str| {
            out.push(
                Finding::new(Code::PlanOverBounds, pointer, span, message)
                    .with_help(help.to_owned()),
            );
        };
        if n > b.max_items_per_plan {
            bound(
                items_span,
                "/items",
                format!(
                    "the proposal has {n} items; a plan may add at most {} (max_items_per_plan)",
                    b.max_items_per_plan
                ),
                "propose fewer items",
            );
        }
        if b.planned_items + n > b.max_planned_items {
            bound(
                items_span,
                "/items",
                format!(
                    "the proposal would bring the items planned by replans to {}; the goal allows {} (max_planned_items, {} used)",
                    b.planned_items + n,
                    b.max_planned_items,
                    b.planned_items
                ),
                "propose fewer items",
            );
        }
        if b.replans_used > b.max_replans {
            let (what, field) = if b.adaptation {
                ("adaptations", "max_adaptations")
            } else {
                ("replans", "max_replans")
            };
            bound(
                whole,
                "",
                format!(
                    "the goal allows {} {what} ({field}); this would be number {}",
                    b.max_replans, b.replans_used
                ),
                "the goal's budget for them is spent",
            );
        }
        let left = b.max_total_attempts.saturating_sub(b.attempts_used);
        if n > left {
            bound(
                items_span,
                "/items",
                format!(
                    "the proposal's {n} items need at least {n} attempts; {left} of the goal's {} remain (max_total_attempts)",
                    b.max_total_attempts
                ),
                "propose fewer items",
            );
        }
        if b.wall_time_left_s == 0 {
            bound(
                whole,
                "",
                "the goal's wall time (max_wall_time_s) is spent".to_owned(),
                "nothing new may start in this goal",
            );
        }
    }

    lwir_spec::finding::sort_findings(&mut out);
    if out.iter().any(Finding::is_error) {
        return (out, None);
    }
    let plan = Plan {
        items: items
            .iter()
            .zip(depends)
            .map(|(item, depends_on)| Planned {
                key: item.key.clone(),
                template: item.template.clone(),
                input: item.input.clone(),
                depends_on,
            })
            .collect(),
        root: root.to_owned(),
    };
    (out, Some(plan))
}

/// The output type of the template named `template` (anything when it is unknown).
/// The type of `goal`: an object whose `input` is exactly the goal input.
fn goal_type(input: &serde_json::Value) -> Ty {
    closed(vec![("input".to_owned(), Ty::of_value(input))])
}

/// The type of `work`: one property per visible key, each `{output}`.
fn work_type(visible: &[(String, Ty)]) -> Ty {
    closed(
        visible
            .iter()
            .map(|(key, output)| {
                (
                    key.clone(),
                    closed(vec![("output".to_owned(), output.clone())]),
                )
            })
            .collect(),
    )
}

fn closed(properties: Vec<(String, Ty)>) -> Ty {
    Ty::Object(Box::new(ObjectTy {
        properties: properties
            .into_iter()
            .map(|(name, ty)| (name, Prop { ty, required: true }))
            .collect(),
        rest: Ty::Never,
        open_by_default: false,
        min_properties: 0,
        max_properties: None,
    }))
}

/// The keys `k` of every `work.<k>` (or `work["k"]`) the value `node` reads, in order.
pub fn work_reads(node: &Node) -> Vec<String> {
    work_use(node).0
}

/// [`work_reads`], and whether `node` also uses `work` otherwise than by a key it names
/// (`work[k]` with a computed `k`, `work` itself): then the type of all of `work` matters.
fn work_use(node: &Node) -> (Vec<String>, bool) {
    let mut keys = BTreeSet::new();
    let mut ordered = Vec::new();
    let mut whole = false;
    each_string(node, &mut |text| {
        if !text.contains("work") {
            return;
        }
        let Ok(value) = parse_string_value(text) else {
            // Not an expression the checker can read: its findings come from the checker,
            // which is given all of `work`.
            whole = true;
            return;
        };
        let mut visit = |e: &Expr| {
            expr_reads(e, &mut |k| match k {
                Some(k) => {
                    if keys.insert(k.to_owned()) {
                        ordered.push(k.to_owned());
                    }
                }
                None => whole = true,
            })
        };
        match &value {
            StringValue::Literal(_) => {}
            StringValue::Expression(e) => visit(e),
            StringValue::Template(parts) => {
                for part in parts {
                    if let Part::Expr(e) = part {
                        visit(e);
                    }
                }
            }
        }
    });
    (ordered, whole)
}

fn each_string(node: &Node, f: &mut dyn FnMut(&str)) {
    if let Some(s) = node.as_str() {
        f(s);
    } else if let Some(items) = node.as_array() {
        for item in items {
            each_string(item, f);
        }
    } else if let Some(members) = node.as_object() {
        for member in members {
            each_string(&member.value, f);
        }
    }
}

/// Calls `f` with each key of `work` that `e` reads by name, and with `None` for a use of
/// `work` that names no key (the parser bounds the depth).
fn expr_reads(e: &Expr, f: &mut dyn FnMut(Option<&str>)) {
    let is_work = |t: &Expr| matches!(&t.kind, ExprKind::Ident { name } if name == "work");
    match &e.kind {
        ExprKind::Member { target, field, .. } if is_work(target) => f(Some(field)),
        ExprKind::Index { target, index } => match (&index.kind, is_work(target)) {
            (ExprKind::String { value }, true) => f(Some(value)),
            _ => e.children(&mut |c| expr_reads(c, f)),
        },
        ExprKind::Ident { name } if name == "work" => f(None),
        _ => e.children(&mut |c| expr_reads(c, f)),
    }
}

/// `a`, `b` and `c`; `nothing` when empty.
fn names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<String> = names.map(|n| format!("`{n}`")).collect();
    match names.len() {
        0 => "nothing".to_owned(),
        1 => names[0].clone(),
        n => format!("{} and {}", names[..n - 1].join(", "), names[n - 1]),
    }
}

/// The flow findings of the members of the input object `node` (typed `ty`) of `item`,
/// each against its property of the template's input type `target`: the errors only (an
/// undecidable member is left to the check of the whole input).
fn member_flows(
    ty: &Ty,
    target: &Ty,
    node: &Node,
    input_pointer: &str,
    item: &ItemSpec,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for member in node.as_object().unwrap_or_default() {
        let (Some((given, _)), Some((wanted, _))) =
            (ty.property(&member.key), target.property(&member.key))
        else {
            continue;
        };
        let at = lwir_spec::pointer::join(input_pointer, &member.key);
        if let Some(finding) =
            lwir_validators::compat::flow_finding(&given, &wanted, &at, member.value.span, || {
                (
                    format!("`{}` of the input of work item `{}`", member.key, item.key),
                    format!(
                        "property `{}` of the input schema of template `{}`",
                        member.key, item.template
                    ),
                )
            })
            && finding.is_error()
        {
            out.push(finding);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::expr_reads;
    use lwir_spec::expr::parse_expression;

    /// The keys of `work` read by `text`, `None` for a use that names none, in order.
    fn reads(text: &str) -> Vec<Option<String>> {
        let e = parse_expression(text).unwrap();
        let mut out = Vec::new();
        expr_reads(&e, &mut |k| out.push(k.map(str::to_owned)));
        out
    }

    #[test]
    fn reads_of_work_by_name_and_otherwise() {
        let some = |k: &str| Some(k.to_owned());
        assert_eq!(reads("work.a"), [some("a")]);
        assert_eq!(reads(r#"work["b"].c"#), [some("b")]);
        assert_eq!(reads("work[input.k]"), [None]);
        assert_eq!(
            reads("size(work) > 0 ? work.a : input.work"),
            [None, some("a")]
        );
        assert_eq!(
            reads("[work.a, {work.b: work.c}].map(x, x + work.d)"),
            [some("a"), some("b"), some("c"), some("d")]
        );
        assert_eq!(reads("steps.work.output.work"), []);
    }
}
