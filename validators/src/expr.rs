//! Expressions: every `${ … }` expression and template of a draft is parsed, checked
//! against the whitelist, resolved in its scope and type-checked against the schemas it
//! reads; values that flow into a schema are checked for compatibility. The result also
//! carries the compiled expression plan (typed trees with cost bounds) and the data
//! references between steps, which the graph validator adds to its cycle check.
//!
//! Scopes: a step sees `input`, the outputs of the steps before it in its own and enclosing
//! step lists, and the variables bound by enclosing `map` (`as`), `reduce` (`acc`, `as`) and
//! macros. The outputs of steps inside a `map` or `loop` body are not visible outside it;
//! those inside a `branch` are visible after it, as maybe absent, like those of steps with
//! a `when`.

use std::collections::{HashMap, HashSet};

use crate::types::{Kinds, ListTy, ObjectTy, Prop, Range, StringTy, Ty};
use lwir_spec::document::{Node, Value, string_source_offset};
use lwir_spec::expr::functions::{self, CostClass, DEFAULT_LIST_BOUND, Param, Style};
use lwir_spec::expr::{
    BinaryOp, Expr, ExprKind, Part, StringValue, SyntaxErrorKind, UnaryOp, parse_string_value,
};
use lwir_spec::ir::{Step, StepKind};
use lwir_spec::suggest::suggest;
use lwir_spec::{Applicability, Code, Finding, Fix, Span, pointer};
use serde::Serialize;

use crate::compat::{self, Compat};
use crate::{Context, one_of};

/// What the expression validator hands on: the plan and the data references.
#[derive(Debug, Default)]
pub struct Analysis {
    /// The compiled expression plan.
    pub plan: Plan,
    /// Resolved `steps.<id>` references: reading step pointer, referenced id, place.
    pub(crate) references: Vec<Reference>,
}

/// The compiled expression plan of a draft: every expression and template in document
/// order, and the types their nodes have, each written once.
///
/// Its JSON form (in a registration record) is flat: the nodes of an entry form a list in
/// which children come before their parent and are named by their index, and the last node
/// is the root. Nothing is nested deeper than a few levels however deep the expression is,
/// and nothing is repeated, so a plan grows linearly with the draft.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Plan {
    /// Every type a node has, written once; a node's `type` is an index into it.
    pub types: Vec<String>,
    /// One entry per expression or template.
    pub entries: Vec<PlanEntry>,
    #[serde(skip)]
    type_index: HashMap<String, usize>,
}

impl Plan {
    /// The sum of the entries' cost bounds.
    pub fn cost(&self) -> u64 {
        self.entries
            .iter()
            .fold(0u64, |sum, e| sum.saturating_add(e.cost))
    }

    /// The type of `node` in `entry`, as text.
    pub fn type_of(&self, node: &serde_json::Value) -> Option<&str> {
        let index = usize::try_from(node.get("type")?.as_u64()?).ok()?;
        self.types.get(index).map(String::as_str)
    }

    fn intern(&mut self, ty: &str) -> usize {
        if let Some(&i) = self.type_index.get(ty) {
            return i;
        }
        let i = self.types.len();
        self.types.push(ty.to_owned());
        self.type_index.insert(ty.to_owned(), i);
        i
    }
}

/// One compiled expression or template.
#[derive(Clone, Debug, Serialize)]
pub struct PlanEntry {
    /// Pointer to the JSON string holding it.
    pub pointer: String,
    /// `expression` (keeps its type) or `template` (a string).
    pub kind: &'static str,
    /// The string as written in the draft.
    pub source: String,
    /// The typed tree, flat: children before parents, named by index; the last is the root.
    /// Every node has its `type` (an index into [`Plan::types`]).
    pub nodes: Vec<serde_json::Value>,
    /// Static upper bound of the evaluation cost, in node evaluations.
    pub cost: u64,
}

impl PlanEntry {
    /// The root node (the last).
    pub fn root(&self) -> Option<&serde_json::Value> {
        self.nodes.last()
    }
}

/// A data dependency from an expression.
#[derive(Clone, Debug)]
pub(crate) struct Reference {
    /// The step whose field holds the expression.
    pub(crate) from_step: String,
    /// The referenced step id.
    pub(crate) to: String,
    /// Pointer and span of the reference.
    pub(crate) pointer: String,
    pub(crate) span: Span,
}

#[derive(Clone, Debug)]
struct StepInfo<'d> {
    id: &'d str,
    output: Option<Ty>,
    maybe_absent: bool,
}

/// What an expression can see: a stack of visible steps (innermost last) and of bound
/// variables, with an index so that lookups do not scan the stack.
#[derive(Debug, Default)]
struct Scope<'d> {
    steps: Vec<StepInfo<'d>>,
    by_id: HashMap<&'d str, Vec<usize>>,
    vars: Vec<(String, Ty)>,
}

impl<'d> Scope<'d> {
    fn push_step(&mut self, info: StepInfo<'d>) {
        self.by_id
            .entry(info.id)
            .or_default()
            .push(self.steps.len());
        self.steps.push(info);
    }

    /// Removes the steps pushed since the stack had `len` entries, and returns them.
    fn pop_steps(&mut self, len: usize) -> Vec<StepInfo<'d>> {
        let removed: Vec<StepInfo<'d>> = self.steps.drain(len..).collect();
        for info in removed.iter().rev() {
            if let Some(v) = self.by_id.get_mut(info.id) {
                v.pop();
                if v.is_empty() {
                    self.by_id.remove(info.id);
                }
            }
        }
        removed
    }

    /// The innermost visible step with id `id`.
    fn step(&self, id: &str) -> Option<&StepInfo<'d>> {
        self.by_id
            .get(id)
            .and_then(|v| v.last())
            .map(|&i| &self.steps[i])
    }
}

/// Runs the expression checks; pushes findings into `out`.
/// With `plan`, also builds the compiled plan (typed trees); `lwirc validate` does not need
/// it, and building it is a large part of the cost of this pass.
pub(crate) fn check(cx: &Context<'_>, out: &mut Vec<Finding>, plan: bool) -> Analysis {
    let input = cx
        .definition
        .as_ref()
        .and_then(|(_, d)| d.root.get("input"))
        .map_or(Ty::Any, |s| schema_ty(s, s, false));
    let mut ids = HashSet::new();
    cx.draft.walk(&mut |s| {
        if let Some(id) = s.id() {
            ids.insert(id);
        }
    });
    let mut checker = Checker {
        cx,
        source: cx.draft_doc.source(),
        input,
        ids,
        out,
        analysis: Analysis::default(),
        current_step: String::new(),
        tool_types: HashMap::new(),
        want_plan: plan,
    };
    let mut scope = Scope::default();
    checker.list(&cx.draft.steps, &mut scope);
    if let Some(output) = cx.draft.root.get("output") {
        checker.current_step = String::new();
        let ty = checker.value(output, "/output".to_owned(), &scope);
        if let Some((_, def)) = &cx.definition
            && let Some(schema) = def.root.get("output")
        {
            let consumer = schema_ty(schema, schema, true);
            checker.flow(
                &ty,
                &consumer,
                "/output",
                output.span,
                "the workflow output",
                "the definition's `output` schema",
            );
        }
    }
    checker.analysis
}

struct Checker<'c, 'd, 'o> {
    cx: &'c Context<'d>,
    source: &'d [u8],
    input: Ty,
    ids: HashSet<&'d str>,
    out: &'o mut Vec<Finding>,
    analysis: Analysis,
    current_step: String,
    /// Types derived from the definition's schemas, once per tool (and input property).
    tool_types: HashMap<(String, String), Ty>,
    /// Whether to build the compiled plan.
    want_plan: bool,
}

/// Where an expression sits: the JSON string node and its pointer.
struct Site<'a> {
    node: &'a Node,
    pointer: &'a str,
}

impl<'d> Checker<'_, 'd, '_> {
    fn list(&mut self, steps: &[Step<'d>], scope: &mut Scope<'d>) {
        for step in steps {
            let info = self.step(step, scope);
            if let Some(info) = info {
                scope.push_step(info);
            }
        }
    }

    /// Checks one step in `scope`; returns what later steps see of it.
    fn step(&mut self, step: &Step<'d>, scope: &mut Scope<'d>) -> Option<StepInfo<'d>> {
        self.current_step = step.pointer.clone();
        if let Some(when) = step.field("when") {
            let ty = self.value(when, step.pointer_to("when"), scope);
            self.expect_bool(&ty, when, &step.pointer_to("when"), "`when`");
        }
        let kind = step.kind?;
        let output = match kind {
            StepKind::ToolCall => self.tool_call(step, scope),
            StepKind::ModelCall | StepKind::CodeRun => {
                for field in ["prompt", "system", "input"] {
                    if let Some(node) = step.field(field) {
                        self.value(node, step.pointer_to(field), scope);
                    }
                }
                Some(
                    step.field("output")
                        .map_or(Ty::Any, |s| schema_ty(s, s, false)),
                )
            }
            StepKind::Map => Some(self.map(step, scope)),
            StepKind::Reduce => Some(self.reduce(step, scope)),
            StepKind::Branch => {
                self.branch(step, scope);
                None
            }
            StepKind::Loop => {
                let depth = scope.steps.len();
                for list in step.nested() {
                    self.list(list.steps, scope);
                }
                if let Some(until) = step.field("until") {
                    self.current_step = step.pointer.clone();
                    let ty = self.value(until, step.pointer_to("until"), scope);
                    self.expect_bool(&ty, until, &step.pointer_to("until"), "`until`");
                }
                scope.pop_steps(depth);
                None
            }
        };
        Some(StepInfo {
            id: step.id()?,
            output,
            maybe_absent: step.field("when").is_some(),
        })
    }

    fn tool_call(&mut self, step: &Step<'d>, scope: &Scope<'d>) -> Option<Ty> {
        let tool = self
            .cx
            .definition
            .as_ref()
            .and_then(|(_, d)| d.tool(step.field("tool")?.as_str()?));
        if let Some(args) = step.field("args").and_then(Node::as_object) {
            let input = tool.and_then(|t| t.input());
            for member in args {
                let at = pointer::join(&step.pointer_to("args"), &member.key);
                let ty = self.value(&member.value, at.clone(), scope);
                // Literal arguments are the capability validator's; expressions flow here.
                if crate::literal::is_literal(&member.value) {
                    continue;
                }
                let Some(schema) = input else { continue };
                let Some(property) = schema.get("properties").and_then(|p| p.get(&member.key))
                else {
                    continue;
                };
                let tool_id = tool.map_or("", |t| t.id);
                let consumer = self
                    .tool_types
                    .entry((tool_id.to_owned(), member.key.to_string()))
                    .or_insert_with(|| schema_ty(property, schema, true))
                    .clone();
                self.flow(
                    &ty,
                    &consumer,
                    &at,
                    member.value.span,
                    &format!("argument `{}`", member.key),
                    &format!("`{tool_id}`'s input property `{}`", member.key),
                );
            }
        }
        let Some(tool) = tool else {
            return Some(Ty::Any);
        };
        let output = self
            .tool_types
            .entry((tool.id.to_owned(), String::new()))
            .or_insert_with(|| {
                tool.output()
                    .map_or(Ty::Any, |schema| schema_ty(schema, schema, false))
            });
        Some(output.clone())
    }

    fn map(&mut self, step: &Step<'d>, scope: &mut Scope<'d>) -> Ty {
        let element = self.over(step, scope);
        let (depth, vars) = (scope.steps.len(), scope.vars.len());
        if let Some(name) = step.field("as").and_then(Node::as_str) {
            scope.vars.push((name.to_owned(), element));
        }
        for list in step.nested() {
            self.list(list.steps, scope);
        }
        self.current_step = step.pointer.clone();
        let result = match step.field("result") {
            Some(node) => self.value(node, step.pointer_to("result"), scope),
            None => Ty::Any,
        };
        scope.pop_steps(depth);
        scope.vars.truncate(vars);
        list_of(result)
    }

    fn reduce(&mut self, step: &Step<'d>, scope: &mut Scope<'d>) -> Ty {
        let element = self.over(step, scope);
        let init = match step.field("init") {
            Some(node) => self.value(node, step.pointer_to("init"), scope).widen(),
            None => Ty::Any,
        };
        let vars = scope.vars.len();
        if let Some(acc) = step.field("acc").and_then(Node::as_str) {
            scope.vars.push((acc.to_owned(), init.clone()));
        }
        if let Some(name) = step.field("as").and_then(Node::as_str) {
            scope.vars.push((name.to_owned(), element));
        }
        let with_ty = step
            .field("with")
            .map(|with| (with, self.value(with, step.pointer_to("with"), scope)));
        scope.vars.truncate(vars);
        if let Some((with, ty)) = with_ty {
            let at = step.pointer_to("with");
            if matches!(ty, Ty::Any) {
                return init;
            }
            if let Compat::Incompatible {
                counterexample,
                reason,
                ..
            } = compat::check(&ty, &init)
            {
                self.push(
                    Finding::new(
                        Code::TypeMismatch,
                        at,
                        with.span,
                        format!(
                            "`with` gives {}, which does not fit `init`'s type {}",
                            ty.summary(),
                            init.summary()
                        ),
                    )
                    .with_help(format!("e.g. {counterexample}: {reason}")),
                );
            }
        }
        init
    }

    fn branch(&mut self, step: &Step<'d>, scope: &mut Scope<'d>) {
        let depth = scope.steps.len();
        let mut visible_after = Vec::new();
        if let Some(cases) = step.field("cases").and_then(Node::as_array) {
            for (i, case) in cases.iter().enumerate() {
                if let Some(when) = case.get("when") {
                    let at =
                        pointer::join(&pointer::join_index(&step.pointer_to("cases"), i), "when");
                    self.current_step = step.pointer.clone();
                    let ty = self.value(when, at.clone(), scope);
                    self.expect_bool(&ty, when, &at, "a branch condition");
                }
            }
        }
        for list in step.nested() {
            self.list(list.steps, scope);
            visible_after.extend(scope.pop_steps(depth).into_iter().map(|mut info| {
                info.maybe_absent = true;
                info
            }));
        }
        for info in visible_after {
            scope.push_step(info);
        }
    }

    /// Types `over`, which must be a list, and returns its element type.
    fn over(&mut self, step: &Step<'d>, scope: &Scope<'d>) -> Ty {
        let Some(node) = step.field("over") else {
            return Ty::Any;
        };
        let at = step.pointer_to("over");
        self.current_step = step.pointer.clone();
        let ty = self.value(node, at.clone(), scope);
        if !ty.may_be(Kinds::LIST) {
            self.push(Finding::new(
                Code::TypeMismatch,
                at,
                node.span,
                format!("`over` must be a list, found {}", ty.summary()),
            ));
            return Ty::Any;
        }
        ty.element().unwrap_or(Ty::Any)
    }

    fn expect_bool(&mut self, ty: &Ty, node: &Node, at: &str, what: &str) {
        if !ty.may_be(Kinds::BOOL) {
            self.push(Finding::new(
                Code::TypeMismatch,
                at,
                node.span,
                format!(
                    "{what} must be a boolean expression, found {}",
                    ty.summary()
                ),
            ));
        }
    }

    /// Checks a producer → consumer flow and reports what is wrong with it.
    fn flow(&mut self, producer: &Ty, consumer: &Ty, at: &str, span: Span, what: &str, into: &str) {
        if matches!(producer, Ty::Any) {
            // Dyn values (from `{}` schemas, or after an earlier finding) are checked at run time.
            return;
        }
        match compat::check(producer, consumer) {
            Compat::Compatible => {}
            Compat::Incompatible {
                counterexample,
                reason,
                constraint,
            } => self.push(
                Finding::new(
                    Code::IncompatibleValueFlow,
                    at,
                    span,
                    match constraint {
                        Some(constraint) => format!(
                            "{what} may not fit {into}: it gives {}, which the consumer's {constraint} does not accept (e.g. {})",
                            producer.summary_with_constraints(),
                            crate::compat::show(&counterexample)
                        ),
                        None => format!(
                            "{what} may not fit {into}: it gives {}, which accepts {} (e.g. {})",
                            producer.summary_with_constraints(),
                            consumer.summary_with_constraints(),
                            crate::compat::show(&counterexample)
                        ),
                    },
                )
                .with_help(format!("for example {counterexample}: {reason}")),
            ),
            Compat::Unknown { reason } => self.push(
                Finding::new(
                    Code::UndecidableValueFlow,
                    at,
                    span,
                    format!("cannot tell whether {what} fits {into}"),
                )
                .with_help(reason),
            ),
        }
    }

    fn push(&mut self, finding: Finding) {
        self.out.push(finding);
    }

    /// Types a JSON value of the draft: literals, expressions, templates, and containers
    /// holding them.
    fn value(&mut self, node: &Node, at: String, scope: &Scope<'d>) -> Ty {
        match &node.value {
            Value::String(text) => self.string(node, text, &at, scope),
            Value::Array(items) => {
                let tys: Vec<Ty> = items
                    .iter()
                    .enumerate()
                    .map(|(i, n)| self.value(n, pointer::join_index(&at, i), scope))
                    .collect();
                Ty::List(Box::new(ListTy {
                    min_items: tys.len() as u64,
                    max_items: Some(tys.len() as u64),
                    prefix: tys,
                    items: Ty::Never,
                    unique: false,
                }))
            }
            Value::Object(members) => {
                let properties = members
                    .iter()
                    .map(|m| {
                        let ty = self.value(&m.value, pointer::join(&at, &m.key), scope);
                        (m.key.to_string(), Prop { ty, required: true })
                    })
                    .collect();
                Ty::Object(Box::new(ObjectTy {
                    properties,
                    rest: Ty::Never,
                    open_by_default: false,
                    min_properties: 0,
                    max_properties: None,
                }))
            }
            _ => Ty::of_value(&node.to_json()),
        }
    }

    fn string(&mut self, node: &Node, text: &str, at: &str, scope: &Scope<'d>) -> Ty {
        let site = Site { node, pointer: at };
        let parsed = match parse_string_value(text) {
            Ok(parsed) => parsed,
            Err(e) => {
                let code = match e.kind {
                    SyntaxErrorKind::Syntax => Code::ExpressionSyntax,
                    SyntaxErrorKind::TooComplex => Code::ExpressionTooComplex,
                };
                let mut finding = Finding::new(code, at, self.span(&site, e.span), e.message);
                if let Some(help) = e.help {
                    finding = finding.with_help(help);
                }
                self.push(finding);
                return Ty::Any;
            }
        };
        match parsed {
            StringValue::Literal(s) => Ty::of_value(&serde_json::Value::String(s)),
            StringValue::Expression(expr) => {
                let mut typer = Typer::new(self, &site, scope);
                let (ty, cost) = typer.expr(&expr);
                if !typer.checker.want_plan {
                    return ty;
                }
                let mut nodes = Vec::new();
                typer.flatten(&expr, &mut nodes);
                self.analysis.plan.entries.push(PlanEntry {
                    pointer: at.to_owned(),
                    kind: "expression",
                    source: text.to_owned(),
                    nodes,
                    cost,
                });
                ty
            }
            StringValue::Template(parts) => {
                let mut typer = Typer::new(self, &site, scope);
                let mut cost = 1u64;
                let mut nodes = Vec::new();
                let mut pieces = Vec::new();
                for part in &parts {
                    match part {
                        Part::Text(t) => pieces.push(serde_json::json!({ "text": t })),
                        Part::Expr(e) => {
                            let (ty, c) = typer.expr(e);
                            cost = cost.saturating_add(c);
                            if !ty.may_be(Kinds::SCALAR) {
                                let span = typer.span(e.span);
                                typer.checker.push(
                                    Finding::new(
                                        Code::NonScalarInTemplate,
                                        at,
                                        span,
                                        format!("a template cannot interpolate {}", ty.summary()),
                                    )
                                    .with_help("interpolate a scalar: pick a field, or `.join(', ')` a list of strings"),
                                );
                            }
                            if typer.checker.want_plan {
                                let root = typer.flatten(e, &mut nodes);
                                pieces.push(serde_json::json!({ "expr": root }));
                            }
                        }
                    }
                }
                if !self.want_plan {
                    return string_ty();
                }
                let ty = self.analysis.plan.intern(&string_ty().display());
                nodes.push(serde_json::json!({ "node": "template", "parts": pieces, "type": ty }));
                self.analysis.plan.entries.push(PlanEntry {
                    pointer: at.to_owned(),
                    kind: "template",
                    source: text.to_owned(),
                    nodes,
                    cost,
                });
                string_ty()
            }
        }
    }

    /// Maps a span inside the decoded string of `site` to bytes of the file.
    fn span(&self, site: &Site<'_>, span: Span) -> Span {
        Span::new(
            string_source_offset(self.source, site.node.span, span.start()),
            string_source_offset(self.source, site.node.span, span.end()),
        )
    }
}

/// Property names listed in a message: all of them as "`a`, `b` or `c`", or past
/// [`NAMES_SHOWN`] the first of them and how many more.
fn some_of(names: &[String]) -> String {
    if names.len() <= NAMES_SHOWN {
        return one_of(names.iter().map(String::as_str));
    }
    let shown: Vec<String> = names[..NAMES_SHOWN]
        .iter()
        .map(|n| format!("`{n}`"))
        .collect();
    format!(
        "{}, … ({} more)",
        shown.join(", "),
        names.len() - NAMES_SHOWN
    )
}

/// At most this many property names are listed in a message.
const NAMES_SHOWN: usize = 12;

/// Types one expression tree in a scope.
struct Typer<'t, 'c, 'd, 'o, 's> {
    checker: &'t mut Checker<'c, 'd, 'o>,
    site: &'s Site<'s>,
    scope: &'s Scope<'d>,
    /// Variables bound by macros inside this expression.
    locals: Vec<(String, Ty)>,
    /// Paths proven present by an enclosing `has(…)` guard.
    guarded: Vec<String>,
    /// The type of every node, by span, for the plan.
    types: HashMap<(usize, usize), String>,
}

impl<'t, 'c, 'd, 'o, 's> Typer<'t, 'c, 'd, 'o, 's> {
    fn new(checker: &'t mut Checker<'c, 'd, 'o>, site: &'s Site<'s>, scope: &'s Scope<'d>) -> Self {
        Self {
            checker,
            site,
            scope,
            locals: Vec::new(),
            guarded: Vec::new(),
            types: HashMap::new(),
        }
    }

    fn span(&self, span: Span) -> Span {
        self.checker.span(self.site, span)
    }

    fn report(&mut self, code: Code, span: Span, message: String) -> &mut Finding {
        let span = self.span(span);
        self.checker
            .push(Finding::new(code, self.site.pointer, span, message));
        self.checker.out.last_mut().expect("just pushed")
    }

    /// The type and cost bound of `expr`.
    fn expr(&mut self, expr: &Expr) -> (Ty, u64) {
        let (ty, cost) = self.expr_inner(expr);
        if self.checker.want_plan {
            self.types
                .insert((expr.span.start(), expr.span.end()), ty.display());
        }
        (ty, cost)
    }

    fn expr_inner(&mut self, expr: &Expr) -> (Ty, u64) {
        match &expr.kind {
            ExprKind::Null => (Ty::Null, 1),
            ExprKind::Bool { value } => (Ty::of_value(&serde_json::Value::Bool(*value)), 1),
            ExprKind::Int { value } => (Ty::of_value(&serde_json::Value::from(*value)), 1),
            ExprKind::Double { value } => (Ty::of_value(&serde_json::Value::from(*value)), 1),
            ExprKind::String { value } => {
                (Ty::of_value(&serde_json::Value::String(value.clone())), 1)
            }
            ExprKind::List { items } => {
                let mut cost = 1u64;
                let mut tys = Vec::new();
                for item in items {
                    let (t, c) = self.expr(item);
                    cost = cost.saturating_add(c);
                    tys.push(t);
                }
                (list_of(Ty::union(tys)), cost)
            }
            ExprKind::Map { entries } => {
                let mut cost = 1u64;
                let mut properties = Vec::new();
                let mut open = false;
                for (k, v) in entries {
                    let (kt, kc) = self.expr(k);
                    let (vt, vc) = self.expr(v);
                    cost = cost.saturating_add(kc).saturating_add(vc);
                    match &k.kind {
                        ExprKind::String { value } => properties.push((
                            value.clone(),
                            Prop {
                                ty: vt,
                                required: true,
                            },
                        )),
                        _ => {
                            if !kt.may_be(Kinds::STRING) {
                                self.report(
                                    Code::TypeMismatch,
                                    k.span,
                                    format!("map keys must be strings, found {}", kt.summary()),
                                );
                            }
                            open = true;
                        }
                    }
                }
                let rest = if open { Ty::Any } else { Ty::Never };
                (
                    Ty::Object(Box::new(ObjectTy {
                        properties,
                        rest,
                        open_by_default: false,
                        min_properties: 0,
                        max_properties: None,
                    })),
                    cost,
                )
            }
            ExprKind::Ident { name } => (self.ident(name, expr.span), 1),
            ExprKind::Member {
                target,
                field,
                field_span,
            } => self.member(expr, target, field, *field_span),
            ExprKind::Index { target, index } => {
                let (tt, tc) = self.expr(target);
                let (it, ic) = self.expr(index);
                let cost = tc.saturating_add(ic).saturating_add(1);
                if let ExprKind::String { value } = &index.kind
                    && tt.may_be(Kinds::OBJECT)
                {
                    return (self.property(&tt, value, index.span, expr), cost);
                }
                if tt.may_be(Kinds::LIST) && it.may_be(Kinds::INT) {
                    return (tt.element().unwrap_or(Ty::Any), cost);
                }
                if tt.may_be(Kinds::OBJECT) && it.may_be(Kinds::STRING) {
                    return (Ty::Any, cost);
                }
                self.report(
                    Code::TypeMismatch,
                    expr.span,
                    format!("cannot index {} with {}", tt.summary(), it.summary()),
                );
                (Ty::Any, cost)
            }
            ExprKind::Call {
                target,
                function,
                function_span,
                args,
            } => self.call(expr, target.as_deref(), function, *function_span, args),
            ExprKind::Unary { op, operand } => {
                let (t, c) = self.expr(operand);
                let ty = match op {
                    UnaryOp::Not => {
                        self.expect(&t, Kinds::BOOL, operand.span, "`!` needs a boolean");
                        Ty::Bool
                    }
                    UnaryOp::Negate => {
                        self.expect(&t, Kinds::NUMBER, operand.span, "`-` needs a number");
                        if t.only(Kinds::INT) {
                            int_ty()
                        } else {
                            number_ty()
                        }
                    }
                };
                (ty, c.saturating_add(1))
            }
            ExprKind::Binary { op, lhs, rhs } => self.binary(*op, lhs, rhs),
            ExprKind::Conditional {
                condition,
                then,
                otherwise,
            } => {
                let (ct, cc) = self.expr(condition);
                self.expect(
                    &ct,
                    Kinds::BOOL,
                    condition.span,
                    "the condition of `?:` must be a boolean",
                );
                let guards = has_guards(condition);
                let before = self.guarded.len();
                self.guarded.extend(guards);
                let (tt, tc) = self.expr(then);
                self.guarded.truncate(before);
                let (ot, oc) = self.expr(otherwise);
                (
                    Ty::union([tt, ot]),
                    cc.saturating_add(tc.max(oc)).saturating_add(1),
                )
            }
        }
    }

    fn binary(&mut self, op: BinaryOp, lhs: &Expr, rhs: &Expr) -> (Ty, u64) {
        let (lt, lc) = self.expr(lhs);
        let before = self.guarded.len();
        if op == BinaryOp::And {
            self.guarded.extend(has_guards(lhs));
        }
        let (rt, rc) = self.expr(rhs);
        self.guarded.truncate(before);
        let cost = lc.saturating_add(rc).saturating_add(1);
        let sym = op.as_str();
        let ty = match op {
            BinaryOp::And | BinaryOp::Or => {
                self.expect(
                    &lt,
                    Kinds::BOOL,
                    lhs.span,
                    &format!("`{sym}` needs booleans"),
                );
                self.expect(
                    &rt,
                    Kinds::BOOL,
                    rhs.span,
                    &format!("`{sym}` needs booleans"),
                );
                Ty::Bool
            }
            BinaryOp::Eq | BinaryOp::Ne => {
                let (l, r) = (lt.kinds(), rt.kinds());
                if !l.meets(r)
                    && l != Kinds::NONE
                    && r != Kinds::NONE
                    && !(l.meets(Kinds::NUMBER) && r.meets(Kinds::NUMBER))
                {
                    self.report(
                        Code::TypeMismatch,
                        Span::new(lhs.span.start(), rhs.span.end()),
                        format!(
                            "`{sym}` compares {} with {}, which can never be equal",
                            lt.summary(),
                            rt.summary()
                        ),
                    );
                }
                Ty::Bool
            }
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
                let comparable = (lt.may_be(Kinds::NUMBER) && rt.may_be(Kinds::NUMBER))
                    || (lt.may_be(Kinds::STRING) && rt.may_be(Kinds::STRING));
                if !comparable {
                    self.report(
                        Code::TypeMismatch,
                        Span::new(lhs.span.start(), rhs.span.end()),
                        format!(
                            "`{sym}` compares numbers or strings, not {} and {}",
                            lt.summary(),
                            rt.summary()
                        ),
                    );
                }
                Ty::Bool
            }
            BinaryOp::In => {
                self.expect(
                    &rt,
                    Kinds::LIST.or(Kinds::OBJECT),
                    rhs.span,
                    "`in` looks in a list or a map",
                );
                Ty::Bool
            }
            BinaryOp::Add => {
                if lt.only(Kinds::INT) && rt.only(Kinds::INT) {
                    int_ty()
                } else if lt.may_be(Kinds::NUMBER)
                    && rt.may_be(Kinds::NUMBER)
                    && lt.only(Kinds::NUMBER)
                    && rt.only(Kinds::NUMBER)
                {
                    number_ty()
                } else if lt.only(Kinds::STRING) && rt.only(Kinds::STRING) {
                    string_ty()
                } else if lt.only(Kinds::LIST) && rt.only(Kinds::LIST) {
                    let items = Ty::union([
                        lt.element().unwrap_or(Ty::Any),
                        rt.element().unwrap_or(Ty::Any),
                    ]);
                    list_of(items)
                } else if lt.is_unknown() || rt.is_unknown() {
                    Ty::Any
                } else {
                    self.report(
                        Code::TypeMismatch,
                        Span::new(lhs.span.start(), rhs.span.end()),
                        format!(
                            "`+` adds numbers, strings or lists of the same kind, not {} and {}",
                            lt.summary(),
                            rt.summary()
                        ),
                    );
                    Ty::Any
                }
            }
            BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => {
                self.expect(
                    &lt,
                    Kinds::NUMBER,
                    lhs.span,
                    &format!("`{sym}` needs numbers"),
                );
                self.expect(
                    &rt,
                    Kinds::NUMBER,
                    rhs.span,
                    &format!("`{sym}` needs numbers"),
                );
                if lt.only(Kinds::INT) && rt.only(Kinds::INT) {
                    int_ty()
                } else {
                    number_ty()
                }
            }
        };
        (ty, cost)
    }

    /// Reports `message` when `ty` cannot be any of `want`.
    fn expect(&mut self, ty: &Ty, want: Kinds, span: Span, message: &str) {
        if !ty.may_be(want) {
            self.report(
                Code::TypeMismatch,
                span,
                format!("{message}, found {}", ty.summary()),
            );
        }
    }

    fn ident(&mut self, name: &str, span: Span) -> Ty {
        if let Some((_, ty)) = self.locals.iter().rev().find(|(n, _)| n == name) {
            return ty.clone();
        }
        if let Some((_, ty)) = self.scope.vars.iter().rev().find(|(n, _)| n == name) {
            return ty.clone();
        }
        match name {
            "input" => return self.checker.input.clone(),
            "steps" => {
                self.report(
                    Code::TypeMismatch,
                    span,
                    "`steps` is not a value: read `steps.<id>.output`".to_owned(),
                );
                return Ty::Any;
            }
            _ => {}
        }
        if functions::is_sandbox_escape(name) {
            self.report(Code::SandboxEscape, span, format!("`{name}` reaches outside the sandbox"))
                .help = Some("the planner cannot see secrets or the environment; pass the value in the workflow input instead".to_owned());
            return Ty::Any;
        }
        let known: Vec<String> = functions::ROOTS
            .iter()
            .map(|s| (*s).to_owned())
            .chain(self.scope.vars.iter().map(|(n, _)| n.clone()))
            .chain(self.locals.iter().map(|(n, _)| n.clone()))
            .collect();
        let help = match suggest(name, known.iter().map(String::as_str)) {
            Some((c, _)) => format!("did you mean `{c}`?"),
            None => format!(
                "expressions start from {}, or a variable bound by `map`, `reduce` or a macro",
                one_of(known.iter().map(String::as_str))
            ),
        };
        self.report(
            Code::UnknownIdentifier,
            span,
            format!("unknown name `{name}`"),
        )
        .help = Some(help);
        Ty::Any
    }

    fn member(&mut self, expr: &Expr, target: &Expr, field: &str, field_span: Span) -> (Ty, u64) {
        // `steps.<id>.output`
        if let ExprKind::Member {
            target: root,
            field: id,
            field_span: id_span,
        } = &target.kind
            && matches!(&root.kind, ExprKind::Ident { name } if name == "steps" && !self.is_bound("steps"))
        {
            self.types.insert(
                (target.span.start(), target.span.end()),
                format!("step {id}"),
            );
            let Some(info) = self.step_ref(id, *id_span) else {
                return (Ty::Any, 1);
            };
            if field != "output" {
                self.report(
                    Code::UnknownProperty,
                    field_span,
                    format!("steps have no `{field}`; read `steps.{id}.output`"),
                );
                return (Ty::Any, 1);
            }
            let Some(output) = info.output else {
                self.report(
                    Code::TypeMismatch,
                    expr.span,
                    format!("step `{id}` produces no output (`branch` and `loop` steps have none)"),
                );
                return (Ty::Any, 1);
            };
            if info.maybe_absent && !self.is_guarded(expr) {
                self.report(
                    Code::MaybeAbsentRead,
                    expr.span,
                    format!("step `{id}` may be skipped, so its output may be absent"),
                )
                .help = Some(format!("guard the read: `has(steps.{id}.output) ? … : …`"));
            }
            return (output, 1);
        }
        if let ExprKind::Ident { name } = &target.kind
            && name == "steps"
            && !self.is_bound("steps")
        {
            // `steps.<id>` used as a value.
            self.step_ref(field, field_span);
            self.report(
                Code::TypeMismatch,
                expr.span,
                format!("`steps.{field}` is not a value: read `steps.{field}.output`"),
            );
            return (Ty::Any, 1);
        }
        let (tt, tc) = self.expr(target);
        (
            self.property(&tt, field, field_span, expr),
            tc.saturating_add(1),
        )
    }

    /// Reads property `name` of a value of type `ty`.
    fn property(&mut self, ty: &Ty, name: &str, name_span: Span, whole: &Expr) -> Ty {
        if !ty.may_be(Kinds::OBJECT) {
            self.report(
                Code::UnknownProperty,
                name_span,
                format!("{} has no property `{name}`", ty.summary()),
            );
            return Ty::Any;
        }
        // An object schema that lists properties and leaves `additionalProperties` unset
        // says nothing of other names: reading one unguarded is almost always a typo.
        let typo = undeclared_by_default(ty, name) && !self.is_guarded(whole);
        match ty.property(name).filter(|_| !typo) {
            Some((t, maybe_absent)) => {
                if maybe_absent && !matches!(ty, Ty::Any | Ty::Opaque(_)) && !self.is_guarded(whole)
                {
                    let names = property_names(ty);
                    let (message, help) = if names.iter().any(|n| n == name) {
                        (
                            format!("`{name}` is not required, so it may be absent"),
                            "guard the read with `has(…)`, e.g. `has(x.f) ? x.f : default`"
                                .to_owned(),
                        )
                    } else {
                        let hint = match suggest(name, names.iter().map(String::as_str)) {
                            Some((c, _)) => format!("did you mean `{c}`? "),
                            None => String::new(),
                        };
                        (
                            format!("`{name}` is not a declared property, so it may be absent"),
                            format!(
                                "{hint}the schema allows other properties but does not declare this one"
                            ),
                        )
                    };
                    self.report(Code::MaybeAbsentRead, name_span, message).help = Some(help);
                }
                t
            }
            None => {
                let names = property_names(ty);
                let span = self.span(name_span);
                let mut finding = Finding::new(
                    Code::UnknownProperty,
                    self.site.pointer,
                    span,
                    format!("{} has no property `{name}`", ty.summary()),
                );
                finding = match suggest(name, names.iter().map(String::as_str)) {
                    Some((c, applicability)) => {
                        finding = finding.with_help(format!("did you mean `{c}`?"));
                        // The fix edits the JSON string: only certain when the name occurs once.
                        match self.rewrite(name_span, c) {
                            // On an object open by default the name could still be
                            // there at run time: show the fix, never apply it unattended.
                            Some(fixed) if applicability == Applicability::MachineApplicable => {
                                let applicability = if typo {
                                    Applicability::MaybeIncorrect
                                } else {
                                    applicability
                                };
                                finding.with_fix(Fix::replace(
                                    applicability,
                                    self.site.pointer,
                                    fixed,
                                ))
                            }
                            _ => finding,
                        }
                    }
                    None if names.is_empty() => finding,
                    None => finding.with_help(format!("it has {}", some_of(&names))),
                };
                if typo {
                    let note = "the schema does not set `additionalProperties`, so only the \
                                properties it lists are known; guard with `has(…)` or set \
                                `additionalProperties` to read others";
                    finding.help = Some(match finding.help.take() {
                        Some(help) => format!("{help} ({note})"),
                        None => note.to_owned(),
                    });
                }
                self.checker.push(finding);
                Ty::Any
            }
        }
    }

    /// The string at the site with the bytes at `span` replaced by `with`.
    fn rewrite(&self, span: Span, with: &str) -> Option<String> {
        let text = self.site.node.as_str()?;
        Some(format!(
            "{}{with}{}",
            text.get(..span.start())?,
            text.get(span.end()..)?
        ))
    }

    fn is_bound(&self, name: &str) -> bool {
        self.locals.iter().any(|(n, _)| n == name) || self.scope.vars.iter().any(|(n, _)| n == name)
    }

    fn is_guarded(&self, expr: &Expr) -> bool {
        let Some(path) = path_of(expr) else {
            return false;
        };
        self.guarded
            .iter()
            .any(|g| *g == path || path.starts_with(&format!("{g}.")))
    }

    /// Resolves `steps.<id>`, reporting unknown and invisible steps; records the edge.
    fn step_ref(&mut self, id: &str, span: Span) -> Option<StepInfo<'d>> {
        let found = self.scope.step(id).cloned();
        let source_span = self.span(span);
        match &found {
            Some(_) => self.checker.analysis.references.push(Reference {
                from_step: self.checker.current_step.clone(),
                to: id.to_owned(),
                pointer: self.site.pointer.to_owned(),
                span: source_span,
            }),
            None if self.checker.ids.contains(id) => {
                self.report(Code::StepNotInScope, span, format!("step `{id}`'s output is not available here"))
                    .help = Some("a step sees the steps before it in its own and enclosing lists; not later steps, nor steps inside a `map` or `loop` body from outside".to_owned());
            }
            None => {
                let visible: Vec<&str> = self
                    .scope
                    .steps
                    .iter()
                    .rev()
                    .take(8)
                    .map(|s| s.id)
                    .collect();
                let help = match suggest(id, self.checker.ids.iter().copied()) {
                    Some((c, _)) => format!("did you mean `{c}`?"),
                    None if visible.is_empty() => "no step is visible here".to_owned(),
                    None => format!("visible steps: {}", one_of(visible.iter().copied())),
                };
                self.report(
                    Code::UnknownStepReference,
                    span,
                    format!("no step has id `{id}`"),
                )
                .help = Some(help);
            }
        }
        found
    }

    fn call(
        &mut self,
        expr: &Expr,
        target: Option<&Expr>,
        name: &str,
        name_span: Span,
        args: &[Expr],
    ) -> (Ty, u64) {
        let Some(function) = functions::function(name) else {
            let mut cost = 1u64;
            if let Some(t) = target {
                cost = cost.saturating_add(self.expr(t).1);
            }
            for a in args {
                cost = cost.saturating_add(self.expr(a).1);
            }
            if functions::is_sandbox_escape(name) {
                self.report(Code::SandboxEscape, name_span, format!("`{name}` reaches outside the sandbox"))
                    .help = Some("the planner cannot see secrets or the environment, and expressions have no I/O; pass the value in the workflow input instead".to_owned());
            } else {
                let help = match suggest(name, functions::FUNCTIONS.iter().map(|f| f.name)) {
                    Some((c, _)) => {
                        format!("did you mean `{c}`? `lwirc explain functions` lists the whitelist")
                    }
                    None => "`lwirc explain functions` lists the functions expressions may call"
                        .to_owned(),
                };
                self.report(
                    Code::UnknownFunction,
                    name_span,
                    format!("`{name}` is not a whitelisted function"),
                )
                .help = Some(help);
            }
            return (Ty::Any, cost);
        };
        let style_ok = matches!(
            (function.style, target.is_some()),
            (Style::Both, _) | (Style::Method, true) | (Style::Global, false)
        );
        if !style_ok {
            let how = if target.is_some() {
                format!("`{name}(x)`")
            } else {
                format!("`x.{name}(…)`")
            };
            self.report(
                Code::UnknownFunction,
                name_span,
                format!("`{name}` is called as {how}"),
            );
        }
        // The subject: the receiver of a method call, or the first argument.
        let (subject, rest): (Option<&Expr>, &[Expr]) = match target {
            Some(t) => (Some(t), args),
            None => match args.split_first() {
                Some((first, rest)) => (Some(first), rest),
                None => (None, args),
            },
        };
        if function.is_macro {
            return self.macro_call(expr, function.name, subject, rest);
        }
        let Some(subject) = subject else {
            self.report(
                Code::TypeMismatch,
                expr.span,
                format!("`{name}` needs an argument"),
            );
            return (Ty::Any, 1);
        };
        let (st, sc) = self.expr(subject);
        let mut cost = sc.saturating_add(1);
        let mut arg_tys = Vec::new();
        for a in rest {
            let (t, c) = self.expr(a);
            cost = cost.saturating_add(c);
            arg_tys.push(t);
        }
        if function.cost == CostClass::Linear {
            cost = cost.saturating_add(size_bound(&st));
        }
        if name == "matches"
            && let Some(pattern) = rest.first()
            && let ExprKind::String { value } = &pattern.kind
            && let Err(e) = regex::Regex::new(value)
        {
            let first_line = e
                .to_string()
                .lines()
                .last()
                .unwrap_or_default()
                .trim()
                .to_owned();
            self.report(Code::InvalidRegex, pattern.span, format!("`{value}` is not a valid RE2 pattern: {first_line}"))
                .help = Some("patterns use RE2 syntax, which runs in linear time: no backreferences or lookaround".to_owned());
        }
        let fitting = function.signatures.iter().find(|sig| {
            sig.params.len() == arg_tys.len()
                && st.may_be(param_kinds(sig.subject))
                && sig
                    .params
                    .iter()
                    .zip(&arg_tys)
                    .all(|(p, t)| t.may_be(param_kinds(*p)))
        });
        match fitting {
            Some(sig) => (param_ty(sig.result), cost),
            None => {
                let sigs: Vec<String> = function
                    .signatures
                    .iter()
                    .map(|s| {
                        let ps: Vec<&str> = std::iter::once(s.subject)
                            .chain(s.params.iter().copied())
                            .map(Param::as_str)
                            .collect();
                        format!("({})", ps.join(", "))
                    })
                    .collect();
                let got: Vec<String> = std::iter::once(st.summary())
                    .chain(arg_tys.iter().map(Ty::summary))
                    .collect();
                self.report(
                    Code::TypeMismatch,
                    expr.span,
                    format!(
                        "`{name}` takes {}, not ({})",
                        sigs.join(" or "),
                        got.join(", ")
                    ),
                );
                (
                    function
                        .signatures
                        .first()
                        .map_or(Ty::Any, |s| param_ty(s.result)),
                    cost,
                )
            }
        }
    }

    fn macro_call(
        &mut self,
        expr: &Expr,
        name: &str,
        subject: Option<&Expr>,
        rest: &[Expr],
    ) -> (Ty, u64) {
        if name == "has" {
            let Some(arg) = subject.filter(|a| matches!(a.kind, ExprKind::Member { .. })) else {
                self.report(
                    Code::TypeMismatch,
                    expr.span,
                    "`has` takes a field read such as `has(x.field)`".to_owned(),
                );
                return (Ty::Bool, 1);
            };
            let before = self.guarded.len();
            if let Some(path) = path_of(arg) {
                self.guarded.push(path);
            }
            let (_, c) = self.expr(arg);
            self.guarded.truncate(before);
            return (Ty::Bool, c.saturating_add(1));
        }
        let Some(list) = subject else {
            return (Ty::Any, 1);
        };
        let (lt, lc) = self.expr(list);
        let (Some(var), Some(body), true) = (rest.first(), rest.get(1), rest.len() == 2) else {
            self.report(
                Code::TypeMismatch,
                expr.span,
                format!("`{name}` takes a variable and an expression: `xs.{name}(x, …)`"),
            );
            return (Ty::Any, lc);
        };
        let ExprKind::Ident { name: var_name } = &var.kind else {
            self.report(
                Code::TypeMismatch,
                var.span,
                format!("the first argument of `{name}` names the element variable"),
            );
            return (Ty::Any, lc);
        };
        if !lt.may_be(Kinds::LIST) {
            self.report(
                Code::TypeMismatch,
                list.span,
                format!("`{name}` works on lists, found {}", lt.summary()),
            );
        }
        let element = lt.element().unwrap_or(Ty::Any);
        self.locals.push((var_name.clone(), element.clone()));
        self.types
            .insert((var.span.start(), var.span.end()), element.display());
        let (bt, bc) = self.expr(body);
        self.locals.pop();
        let bound = list_bound(&lt);
        let cost = lc.saturating_add(bound.saturating_mul(bc.saturating_add(1)));
        let ty = match name {
            "map" => Ty::List(Box::new(ListTy {
                items: bt,
                max_items: Some(bound),
                ..ListTy::default()
            })),
            "filter" => {
                self.expect(
                    &bt,
                    Kinds::BOOL,
                    body.span,
                    "the predicate of `filter` must be a boolean",
                );
                lt.clone()
            }
            _ => {
                self.expect(
                    &bt,
                    Kinds::BOOL,
                    body.span,
                    &format!("the predicate of `{name}` must be a boolean"),
                );
                Ty::Bool
            }
        };
        (ty, cost)
    }

    /// Appends the typed nodes of `expr` to `nodes`, children first; returns the index of
    /// its root. Recursion is bounded by the parser's `MAX_DEPTH`.
    fn flatten(&mut self, expr: &Expr, nodes: &mut Vec<serde_json::Value>) -> usize {
        use serde_json::{Value, json};
        let mut node = match &expr.kind {
            ExprKind::Null => json!({ "node": "null" }),
            ExprKind::Bool { value } => json!({ "node": "bool", "value": value }),
            ExprKind::Int { value } => json!({ "node": "int", "value": value }),
            ExprKind::Double { value } => json!({ "node": "double", "value": value }),
            ExprKind::String { value } => json!({ "node": "string", "value": value }),
            ExprKind::Ident { name } => json!({ "node": "ident", "name": name }),
            ExprKind::List { items } => {
                let items: Vec<usize> = items.iter().map(|i| self.flatten(i, nodes)).collect();
                json!({ "node": "list", "items": items })
            }
            ExprKind::Map { entries } => {
                let entries: Vec<[usize; 2]> = entries
                    .iter()
                    .map(|(k, v)| [self.flatten(k, nodes), self.flatten(v, nodes)])
                    .collect();
                json!({ "node": "map", "entries": entries })
            }
            ExprKind::Member { target, field, .. } => {
                let target = self.flatten(target, nodes);
                json!({ "node": "member", "target": target, "field": field })
            }
            ExprKind::Index { target, index } => {
                let target = self.flatten(target, nodes);
                let index = self.flatten(index, nodes);
                json!({ "node": "index", "target": target, "index": index })
            }
            ExprKind::Call {
                target,
                function,
                args,
                ..
            } => {
                let target = target.as_ref().map(|t| self.flatten(t, nodes));
                let args: Vec<usize> = args.iter().map(|a| self.flatten(a, nodes)).collect();
                json!({ "node": "call", "target": target, "function": function, "args": args })
            }
            ExprKind::Unary { op, operand } => {
                let operand = self.flatten(operand, nodes);
                json!({ "node": "unary", "op": op, "operand": operand })
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let lhs = self.flatten(lhs, nodes);
                let rhs = self.flatten(rhs, nodes);
                json!({ "node": "binary", "op": op, "lhs": lhs, "rhs": rhs })
            }
            ExprKind::Conditional {
                condition,
                then,
                otherwise,
            } => {
                let condition = self.flatten(condition, nodes);
                let then = self.flatten(then, nodes);
                let otherwise = self.flatten(otherwise, nodes);
                json!({ "node": "conditional", "condition": condition, "then": then, "otherwise": otherwise })
            }
        };
        if let (Value::Object(obj), Some(ty)) = (
            &mut node,
            self.types.get(&(expr.span.start(), expr.span.end())),
        ) {
            let ty = self.checker.analysis.plan.intern(ty);
            obj.insert("type".to_owned(), Value::from(ty));
        }
        nodes.push(node);
        nodes.len() - 1
    }
}

/// The type of `schema` (resolving `$ref`s in `root`): exact for consumers of a value flow,
/// possibly over-approximated for producers. A schema outside the subset is dyn: the shape
/// validator reports it, and guessing its type would only add findings that follow from it.
fn schema_ty(schema: &Node, root: &Node, exact: bool) -> Ty {
    let mut problems = Vec::new();
    crate::subset::check(root, String::new(), lwir_spec::Origin::Draft, &mut problems);
    if !problems.is_empty() {
        return Ty::Any;
    }
    if exact {
        Ty::from_schema_exact(schema, root)
    } else {
        Ty::from_schema(schema, root)
    }
}

fn param_kinds(p: Param) -> Kinds {
    match p {
        Param::Any => Kinds::ALL,
        Param::Scalar => Kinds::SCALAR,
        Param::Bool => Kinds::BOOL,
        Param::Int => Kinds::INT,
        Param::Double => Kinds::NUMBER,
        Param::String => Kinds::STRING,
        Param::Sized => Kinds::STRING.or(Kinds::LIST).or(Kinds::OBJECT),
        Param::ListOfString | Param::List => Kinds::LIST,
    }
}

fn param_ty(p: Param) -> Ty {
    match p {
        Param::Bool => Ty::Bool,
        Param::Int => int_ty(),
        Param::Double => number_ty(),
        Param::String => string_ty(),
        Param::ListOfString => list_of(string_ty()),
        Param::List => list_of(Ty::Any),
        Param::Any | Param::Scalar | Param::Sized => Ty::Any,
    }
}

fn int_ty() -> Ty {
    Ty::Int(Range::default())
}

fn number_ty() -> Ty {
    Ty::Number(Range::default())
}

fn string_ty() -> Ty {
    Ty::String(StringTy::default())
}

fn list_of(items: Ty) -> Ty {
    Ty::List(Box::new(ListTy {
        items,
        ..ListTy::default()
    }))
}

/// The most elements a list of type `ty` can have, for cost bounds.
fn list_bound(ty: &Ty) -> u64 {
    match ty {
        Ty::List(l) => l.max_items.unwrap_or(DEFAULT_LIST_BOUND),
        Ty::Literal(serde_json::Value::Array(a)) => a.len() as u64,
        _ => DEFAULT_LIST_BOUND,
    }
}

/// The size bound of a string or list, for linear functions.
fn size_bound(ty: &Ty) -> u64 {
    match ty {
        Ty::String(s) => s.max_len.unwrap_or(DEFAULT_LIST_BOUND),
        Ty::Literal(serde_json::Value::String(s)) => s.chars().count() as u64,
        other => list_bound(other),
    }
}

/// Whether every object `ty` can be lists properties, leaves `additionalProperties` unset
/// and does not list `name`.
fn undeclared_by_default(ty: &Ty, name: &str) -> bool {
    match ty {
        Ty::Object(o) => o.open_by_default && !o.properties.is_empty() && o.prop(name).is_none(),
        Ty::Union(members) => {
            let mut objects = members
                .iter()
                .filter(|m| m.may_be(Kinds::OBJECT))
                .peekable();
            objects.peek().is_some() && objects.all(|m| undeclared_by_default(m, name))
        }
        _ => false,
    }
}

fn property_names(ty: &Ty) -> Vec<String> {
    match ty {
        Ty::Object(o) => o.properties.iter().map(|(n, _)| n.clone()).collect(),
        Ty::Union(members) => {
            let mut names: Vec<String> = members.iter().flat_map(property_names).collect();
            names.dedup();
            names
        }
        _ => Vec::new(),
    }
}

/// `a.b.c` for a chain of member reads from a name; `None` for anything else.
fn path_of(expr: &Expr) -> Option<String> {
    match &expr.kind {
        ExprKind::Ident { name } => Some(name.clone()),
        ExprKind::Member { target, field, .. } => Some(format!("{}.{field}", path_of(target)?)),
        _ => None,
    }
}

/// The paths a condition proves present: `has(a.b)`, and each side of `&&`.
fn has_guards(condition: &Expr) -> Vec<String> {
    match &condition.kind {
        ExprKind::Call {
            target: None,
            function,
            args,
            ..
        } if function == "has" => args.first().and_then(path_of).into_iter().collect(),
        ExprKind::Binary {
            op: BinaryOp::And,
            lhs,
            rhs,
        } => {
            let mut guards = has_guards(lhs);
            guards.extend(has_guards(rhs));
            guards
        }
        _ => Vec::new(),
    }
}
