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

use foldhash::{HashMap, HashSet};

use crate::types::{Kinds, ListTy, ObjectTy, Prop, Range, StringTy, Ty};
use lwir_spec::SpannedDocument;
use lwir_spec::document::{Node, StringOffsets, Value};
use lwir_spec::expr::functions::{self, CostClass, DEFAULT_LIST_BOUND, Param, Style};
use lwir_spec::expr::{
    BinaryOp, Expr, ExprKind, Part, StringValue, SyntaxError, SyntaxErrorKind, UnaryOp,
    parse_string_value,
};
use lwir_spec::ir::{Draft, Step, StepKind};
use lwir_spec::suggest::suggest;
use lwir_spec::{Applicability, Code, Finding, Fix, Span, pointer};
use serde::Serialize;
use std::borrow::Cow;
use std::cell::{Cell, OnceCell};
use std::rc::Rc;
use std::sync::{Arc, OnceLock};

use crate::compat::{self, Compat};
use crate::{Context, one_of};

mod calls;
mod halves;
pub(crate) mod memo;
mod plan;
mod scope;
mod typer;

pub use halves::with_split;
pub use memo::Memo;
pub use plan::{Plan, PlanEntry};
pub(crate) use scope::Reference;
use scope::{Scope, StepInfo};
use typer::*;

/// What the expression validator hands on: the plan and the data references.
#[derive(Debug, Default)]
pub struct Analysis {
    /// The compiled expression plan.
    pub plan: Plan,
    /// Resolved `steps.<id>` references: reading step pointer, referenced id, place; in
    /// document order, after those of `earlier`.
    pub(crate) references: Vec<Reference>,
    /// References put aside whole, in order, before `references`: each thread's part of
    /// a split pass (see `halves`), which a large draft has hundreds of thousands of, is
    /// kept as it is instead of copied into one list.
    earlier: Vec<Vec<Reference>>,
}

impl Analysis {
    /// Every resolved reference, in document order.
    pub(crate) fn all_references(&self) -> impl Iterator<Item = &Reference> + Clone {
        self.earlier.iter().flatten().chain(&self.references)
    }
}

/// Runs the expression checks; pushes findings into `out`.
/// With `plan`, also builds the compiled plan (typed trees); `lwirc validate` does not need
/// it, and building it is a large part of the cost of this pass.
pub(crate) fn check(
    cx: &Context<'_>,
    out: &mut Vec<Finding>,
    plan: bool,
    memo: Option<&mut memo::Steps>,
) -> Analysis {
    let input = cx
        .definition
        .as_ref()
        .and_then(|(_, d)| d.root.get("input"))
        .map_or(Ty::Any, |s| schema_ty(s, s, false));
    let ids = Ids::of(&cx.draft);
    let mut checker = Checker::new(cx, input, &ids, out, plan);
    let mut scope = Scope::default();
    match memo {
        // The plan is not kept: a memo serves an editor, which shows findings.
        Some(memo) if !plan => checker.top_level(&cx.draft.steps, &mut scope, memo),
        Some(memo) => {
            *memo = memo::Steps::default();
            checker.list(&cx.draft.steps, &mut scope);
        }
        // The plan's entries are numbered in one order: it is built on one thread.
        None if !plan => checker.halves(&cx.draft.steps, &mut scope),
        None => checker.list(&cx.draft.steps, &mut scope),
    }
    if let Some(output) = cx.draft.root.get("output") {
        checker.current_step = Arc::from("");
        let ty = checker.value(output, "/output".to_owned(), &scope);
        if let Some((_, def)) = &cx.definition
            && let Some(schema) = def.root.get("output")
        {
            let consumer = schema_ty(schema, schema, true);
            checker.flow(&ty, &consumer, "/output", output.span, || {
                (
                    "the workflow output".to_owned(),
                    "the definition's `output` schema".to_owned(),
                )
            });
        }
    }
    checker.analysis
}

/// The static type of `node`, a value in `document` (a literal, a `${ … }` expression, a
/// template, or an array or object of them), with `variables` bound (`input`, `goal`,
/// `work`, …, each with its type), and the findings of checking it: syntax, the
/// whitelist, names, types. Findings point into `document` at `pointer` and below. For a
/// value outside a draft: a goal's work input, or an expression to evaluate.
pub fn type_of_value(
    document: &SpannedDocument,
    node: &Node,
    pointer: &str,
    variables: &[(&str, Ty)],
) -> (Ty, Vec<Finding>) {
    let cx = Context {
        draft_doc: document,
        draft: Draft::new(document.root()),
        definition: None,
    };
    let mut out = Vec::new();
    let input = variables
        .iter()
        .find(|(name, _)| *name == "input")
        .map_or(Ty::Any, |(_, ty)| ty.clone());
    let ids = Ids::none();
    let mut checker = Checker::new(&cx, input, &ids, &mut out, false);
    let mut scope = Scope::default();
    scope.vars = variables
        .iter()
        .map(|(name, ty)| ((*name).to_owned(), ty.clone()))
        .collect();
    let ty = checker.value(node, pointer.to_owned(), &scope);
    (ty, out)
}

struct Checker<'c, 'd, 'o> {
    cx: &'c Context<'d>,
    source: &'d [u8],
    input: Ty,
    /// The ids of the draft's steps.
    ids: &'c Ids<'c, 'd>,
    out: &'o mut Vec<Finding>,
    analysis: Analysis,
    /// The pointer to the step being checked, shared by the references it makes.
    current_step: Arc<str>,
    /// Types derived from the definition's schemas, once per tool (and input property).
    tool_types: HashMap<(&'d str, &'d str), Arc<Ty>>,
    /// Types of the draft's own output schemas, by their source bytes: the same text is the
    /// same schema, so a draft that repeats one (every model call of a kind, say) derives
    /// its type once.
    output_types: HashMap<&'d [u8], Arc<Ty>>,
    /// Whether to build the compiled plan.
    want_plan: bool,
    /// Parsed string values by their text.
    parsed: ParseCache,
    /// Whether only what later steps see of a step is wanted (its id, output type and
    /// whether it may be absent): the checks that cannot change it are skipped, and what
    /// the others find is thrown away (see `halves`).
    quiet: bool,
}

impl<'c, 'd, 'o> Checker<'c, 'd, 'o> {
    fn new(
        cx: &'c Context<'d>,
        input: Ty,
        ids: &'c Ids<'c, 'd>,
        out: &'o mut Vec<Finding>,
        want_plan: bool,
    ) -> Self {
        Checker {
            cx,
            source: cx.draft_doc.source(),
            input,
            ids,
            out,
            analysis: Analysis::default(),
            current_step: Arc::from(""),
            tool_types: HashMap::default(),
            output_types: HashMap::default(),
            want_plan,
            parsed: ParseCache::default(),
            quiet: false,
        }
    }
}

/// The ids of a draft's steps, found when first asked for: only a reference that does not
/// resolve (a finding) or the editor's memo needs them, and finding them walks every step.
struct Ids<'c, 'd> {
    draft: Option<&'c Draft<'d>>,
    found: OnceLock<(HashSet<&'d str>, Vec<&'d str>)>,
}

impl<'c, 'd> Ids<'c, 'd> {
    fn of(draft: &'c Draft<'d>) -> Self {
        Ids {
            draft: Some(draft),
            found: OnceLock::new(),
        }
    }

    /// No steps: for a value outside a draft.
    fn none() -> Self {
        Ids {
            draft: None,
            found: OnceLock::new(),
        }
    }

    fn found(&self) -> &(HashSet<&'d str>, Vec<&'d str>) {
        self.found.get_or_init(|| {
            let mut ids = HashSet::default();
            // In document order too: what suggestions are chosen from, so that of two as
            // close the first is, whatever the set's order.
            let mut in_order = Vec::new();
            if let Some(draft) = self.draft {
                draft.walk(&mut |s| {
                    if let Some(id) = s.id() {
                        ids.insert(id);
                        in_order.push(id);
                    }
                });
            }
            (ids, in_order)
        })
    }

    /// The ids, as a set.
    fn set(&self) -> &HashSet<&'d str> {
        &self.found().0
    }

    /// The ids in document order (repeated ids repeated).
    fn in_order(&self) -> &[&'d str] {
        &self.found().1
    }
}

/// String values with interpolations, parsed, by their text: parsing is a function of the
/// text alone, and drafts repeat their expressions (`${ input.repo }` in every call, a
/// step's output read the same way by the steps after it). At most
/// [`ParseCache::ENTRIES`] are kept — repeats are mostly near each other — so the cache
/// stays small however large the draft.
#[derive(Default)]
struct ParseCache {
    values: HashMap<Box<str>, Rc<Result<StringValue, SyntaxError>>>,
}

impl ParseCache {
    const ENTRIES: usize = 256;

    /// `parse_string_value(text)`, from the cache when `text` was parsed before.
    fn parse(&mut self, text: &str) -> Rc<Result<StringValue, SyntaxError>> {
        // A literal is read in one scan, faster than it is hashed.
        if !caches_on() || !text.contains("${") {
            return Rc::new(parse_string_value(text));
        }
        if let Some(parsed) = self.values.get(text) {
            return Rc::clone(parsed);
        }
        if self.values.len() >= Self::ENTRIES {
            self.values.clear();
        }
        let parsed = Rc::new(parse_string_value(text));
        self.values.insert(text.into(), Rc::clone(&parsed));
        parsed
    }
}

thread_local! {
    /// Whether this thread's validations use their caches (see [`without_caches`]).
    static CACHES: Cell<bool> = const { Cell::new(true) };
}

fn caches_on() -> bool {
    CACHES.with(Cell::get)
}

/// Runs `f` with the expression validator's caches off on this thread — parsed string
/// values, derived output types — so that tests can compare each cache with the
/// straightforward path.
#[doc(hidden)]
pub fn without_caches<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            CACHES.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CACHES.with(|c| c.replace(false)));
    f()
}

/// Where an expression sits: the JSON string node and its pointer.
struct Site<'a> {
    node: &'a Node,
    pointer: &'a str,
    /// The string's escapes, found the first time a span in it is mapped to the file (a
    /// template names many steps: each reference's span would walk the string again).
    offsets: OnceCell<StringOffsets>,
    /// `pointer`, shared by the step references in the string.
    shared_pointer: OnceCell<Arc<str>>,
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
        self.current_step = Arc::from(step.pointer.as_str());
        let quiet = self.quiet;
        if let Some(when) = step.field("when").filter(|_| !quiet) {
            let ty = self.value(when, step.pointer_to("when"), scope);
            self.expect_bool(&ty, when, &step.pointer_to("when"), "`when`");
        }
        let kind = step.kind?;
        let output = match kind {
            StepKind::ToolCall => self.tool_call(step, scope),
            StepKind::ModelCall | StepKind::CodeRun => {
                let fields: &[&str] = if self.quiet {
                    &[]
                } else {
                    &["prompt", "system", "input"]
                };
                for &field in fields {
                    if let Some(node) = step.field(field) {
                        self.value(node, step.pointer_to(field), scope);
                    }
                }
                Some(
                    step.field("output")
                        .map_or_else(|| Arc::new(Ty::Any), |s| self.output_type(s)),
                )
            }
            StepKind::Map => Some(Arc::new(self.map(step, scope))),
            StepKind::Reduce => Some(Arc::new(self.reduce(step, scope))),
            StepKind::Branch => {
                self.branch(step, scope);
                None
            }
            // Nothing of a loop is seen after it.
            StepKind::Loop if self.quiet => None,
            StepKind::Loop => {
                let depth = scope.steps.len();
                for list in step.nested() {
                    self.list(list.steps, scope);
                }
                if let Some(until) = step.field("until") {
                    self.current_step = Arc::from(step.pointer.as_str());
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

    fn tool_call(&mut self, step: &Step<'d>, scope: &Scope<'d>) -> Option<Arc<Ty>> {
        let tool = self
            .cx
            .definition
            .as_ref()
            .and_then(|(_, d)| d.tool(step.field("tool")?.as_str()?));
        let quiet = self.quiet;
        if let Some(args) = step
            .field("args")
            .and_then(Node::as_object)
            .filter(|_| !quiet)
        {
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
                    .entry((tool_id, member.key.as_str()))
                    .or_insert_with(|| Arc::new(schema_ty(property, schema, true)))
                    .clone();
                self.flow(&ty, &consumer, &at, member.value.span, || {
                    (
                        format!("argument `{}`", member.key),
                        format!("`{tool_id}`'s input property `{}`", member.key),
                    )
                });
            }
        }
        let Some(tool) = tool else {
            return Some(Arc::new(Ty::Any));
        };
        // Its output by the tool's id and an empty key, which no input property has.
        let output = self.tool_types.entry((tool.id, "")).or_insert_with(|| {
            Arc::new(
                tool.output()
                    .map_or(Ty::Any, |schema| schema_ty(schema, schema, false)),
            )
        });
        Some(Arc::clone(output))
    }

    /// The type of `schema`, a schema written in the draft (cached by its source bytes).
    fn output_type(&mut self, schema: &'d Node) -> Arc<Ty> {
        let source = self.source;
        match source.get(schema.span.range()) {
            Some(text) if caches_on() => Arc::clone(
                self.output_types
                    .entry(text)
                    .or_insert_with(|| Arc::new(schema_ty(schema, schema, false))),
            ),
            _ => Arc::new(schema_ty(schema, schema, false)),
        }
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
        self.current_step = Arc::from(step.pointer.as_str());
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
        let quiet = self.quiet;
        let with_ty = step
            .field("with")
            .filter(|_| !quiet)
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
        let (depth, quiet) = (scope.steps.len(), self.quiet);
        let mut visible_after = Vec::new();
        if let Some(cases) = step.field("cases").and_then(Node::as_array) {
            for (i, case) in cases.iter().enumerate() {
                if let Some(when) = case.get("when").filter(|_| !quiet) {
                    let at =
                        pointer::join(&pointer::join_index(&step.pointer_to("cases"), i), "when");
                    self.current_step = Arc::from(step.pointer.as_str());
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
        self.current_step = Arc::from(step.pointer.as_str());
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
        ty.into_element().unwrap_or(Ty::Any)
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

    /// Checks a producer → consumer flow and reports what is wrong with it; `names` says
    /// what flows into what, and is asked only for a finding.
    fn flow(
        &mut self,
        producer: &Ty,
        consumer: &Ty,
        at: &str,
        span: Span,
        names: impl FnOnce() -> (String, String),
    ) {
        if let Some(finding) = compat::flow_finding(producer, consumer, at, span, names) {
            self.push(finding);
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
                        (m.key.as_str().to_owned(), Prop { ty, required: true })
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
        let site = Site {
            node,
            pointer: at,
            offsets: OnceCell::new(),
            shared_pointer: OnceCell::new(),
        };
        let parsed = self.parsed.parse(text);
        let parsed = match &*parsed {
            Ok(parsed) => parsed,
            Err(e) => {
                let code = match e.kind {
                    SyntaxErrorKind::Syntax => Code::ExpressionSyntax,
                    SyntaxErrorKind::TooComplex => Code::ExpressionTooComplex,
                };
                let mut finding =
                    Finding::new(code, at, self.span(&site, e.span), e.message.clone());
                if let Some(help) = &e.help {
                    finding = finding.with_help(help.clone());
                }
                self.push(finding);
                return Ty::Any;
            }
        };
        match parsed {
            StringValue::Literal(s) => Ty::of_value(&serde_json::Value::String(s.clone())),
            StringValue::Expression(expr) => {
                let mut typer = Typer::new(self, &site, scope);
                let (ty, cost) = typer.expr(expr);
                if !typer.checker.want_plan {
                    return ty;
                }
                let mut nodes = Vec::new();
                typer.flatten(expr, &mut nodes);
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
                for part in parts {
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
        let offsets = site
            .offsets
            .get_or_init(|| StringOffsets::new(self.source, site.node.span));
        Span::new(offsets.offset(span.start()), offsets.offset(span.end()))
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
