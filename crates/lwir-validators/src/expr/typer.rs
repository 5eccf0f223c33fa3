//! Typing one expression tree in its scope: literals, names, members, operators; each
//! node's type and cost bound.

use super::*;

/// Types one expression tree in a scope.
pub(super) struct Typer<'t, 'c, 'd, 'o, 's> {
    pub(super) checker: &'t mut Checker<'c, 'd, 'o>,
    pub(super) site: &'s Site<'s>,
    pub(super) scope: &'s Scope<'d>,
    /// Variables bound by macros inside this expression.
    pub(super) locals: Vec<(String, Ty)>,
    /// Paths proven present by an enclosing `has(…)` guard.
    pub(super) guarded: Vec<String>,
    /// The type of every node, by span, for the plan.
    pub(super) types: HashMap<(usize, usize), String>,
}

impl<'t, 'c, 'd, 'o, 's> Typer<'t, 'c, 'd, 'o, 's> {
    pub(super) fn new(
        checker: &'t mut Checker<'c, 'd, 'o>,
        site: &'s Site<'s>,
        scope: &'s Scope<'d>,
    ) -> Self {
        Self {
            checker,
            site,
            scope,
            locals: Vec::new(),
            guarded: Vec::new(),
            types: HashMap::default(),
        }
    }

    pub(super) fn span(&self, span: Span) -> Span {
        self.checker.span(self.site, span)
    }

    pub(super) fn report(&mut self, code: Code, span: Span, message: String) -> &mut Finding {
        let span = self.span(span);
        self.checker
            .push(Finding::new(code, self.site.pointer, span, message));
        self.checker.out.last_mut().expect("just pushed")
    }

    /// The type and cost bound of `expr`.
    pub(super) fn expr(&mut self, expr: &Expr) -> (Ty, u64) {
        let (ty, cost) = self.expr_inner(expr);
        if self.checker.want_plan {
            self.types
                .insert((expr.span.start(), expr.span.end()), ty.display());
        }
        (ty, cost)
    }

    pub(super) fn expr_inner(&mut self, expr: &Expr) -> (Ty, u64) {
        match &expr.kind {
            ExprKind::Null => (Ty::Null, 1),
            ExprKind::Bool { value } => (Ty::of_value(&serde_json::Value::Bool(*value)), 1),
            ExprKind::Int { value } => (Ty::of_value(&serde_json::Value::from(*value)), 1),
            // A whole double (`2.0`) is an integer as a JSON value, but arithmetic on it is
            // double arithmetic (`2.0 / 3.0` is a fraction, `2.0 / 0.0` infinite): any number.
            ExprKind::Double { value } if value.fract() == 0.0 || !value.is_finite() => {
                (number_ty(), 1)
            }
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
                let (tt, tc) = self.expr_cow(target);
                let (it, ic) = self.expr(index);
                let cost = tc.saturating_add(ic).saturating_add(1);
                if let ExprKind::String { value } = &index.kind
                    && tt.may_be(Kinds::OBJECT)
                {
                    return (self.property(&tt, value, index.span, expr), cost);
                }
                if tt.may_be(Kinds::LIST) && it.may_be(Kinds::INT) {
                    let element = match tt {
                        Cow::Owned(t) => t.into_element(),
                        Cow::Borrowed(t) => t.element(),
                    };
                    return (element.unwrap_or(Ty::Any), cost);
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

    pub(super) fn binary(&mut self, op: BinaryOp, lhs: &Expr, rhs: &Expr) -> (Ty, u64) {
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
    pub(super) fn expect(&mut self, ty: &Ty, want: Kinds, span: Span, message: &str) {
        if !ty.may_be(want) {
            self.report(
                Code::TypeMismatch,
                span,
                format!("{message}, found {}", ty.summary()),
            );
        }
    }

    pub(super) fn ident(&mut self, name: &str, span: Span) -> Ty {
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
        let suggestion = suggest(name, known.iter().map(String::as_str));
        let help = match suggestion {
            Some((c, _)) => format!("did you mean `{c}`?"),
            None => format!(
                "expressions start from {}, or a variable bound by `map`, `reduce` or a macro",
                one_of(known.iter().map(String::as_str))
            ),
        };
        self.unknown(
            Code::UnknownIdentifier,
            span,
            format!("unknown name `{name}`"),
            help,
            suggestion,
        );
        Ty::Any
    }

    pub(super) fn member(
        &mut self,
        expr: &Expr,
        target: &Expr,
        field: &str,
        field_span: Span,
    ) -> (Ty, u64) {
        // `steps.<id>.output`
        if let Some((id, id_span)) = self.step_path(target) {
            let output = self.step_output(expr, target, id, id_span, field, field_span);
            return (output.cloned().unwrap_or(Ty::Any), 1);
        }
        // `steps.<id>.output.<field>` and `<variable>.<field>`, without a plan: the property
        // read from the type where it is kept, not from a copy of the whole of it (what
        // `self.expr(target)` gives; the same findings, the same result).
        if !self.checker.want_plan
            && let Some(ty) = self.output_field(expr, target, field, field_span)
        {
            return (ty.into_owned(), 2);
        }
        if !self.checker.want_plan
            && let ExprKind::Ident { name } = &target.kind
        {
            if let Some(i) = self.locals.iter().rposition(|(n, _)| n == name) {
                // `property` reads neither the locals nor the scope's variables.
                let locals = std::mem::take(&mut self.locals);
                let ty = self.property(&locals[i].1, field, field_span, expr);
                self.locals = locals;
                return (ty, 2);
            }
            let scope = self.scope;
            if let Some((_, var)) = scope.vars.iter().rev().find(|(n, _)| n == name) {
                return (self.property(var, field, field_span, expr), 2);
            }
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

    /// `expr` = `target.field` where `target` is `steps.<id>.output`: the field's type,
    /// borrowed where the scope keeps it; `None` when `target` is another shape.
    fn output_field(
        &mut self,
        expr: &Expr,
        target: &Expr,
        field: &str,
        field_span: Span,
    ) -> Option<Cow<'s, Ty>> {
        static ANY: Ty = Ty::Any;
        let ExprKind::Member {
            target: inner,
            field: inner_field,
            field_span: inner_span,
        } = &target.kind
        else {
            return None;
        };
        let (id, id_span) = self.step_path(inner)?;
        let output = self.step_output(target, inner, id, id_span, inner_field, *inner_span);
        Some(self.property_cow(output.unwrap_or(&ANY), field, field_span, expr))
    }

    /// Reads property `name` of a value of type `ty`.
    pub(super) fn property(&mut self, ty: &Ty, name: &str, name_span: Span, whole: &Expr) -> Ty {
        self.property_cow(ty, name, name_span, whole).into_owned()
    }

    /// `expr`'s type and cost bound, borrowed where the scope keeps it — `steps.<id>.output`
    /// and `steps.<id>.output.<field>`, without a plan — for a caller that only reads it
    /// (a function's subject, a macro's list, an indexed value): what [`Typer::expr`] gives,
    /// with the same findings, without a copy.
    pub(super) fn expr_cow(&mut self, expr: &Expr) -> (Cow<'s, Ty>, u64) {
        static ANY: Ty = Ty::Any;
        if !self.checker.want_plan
            && let ExprKind::Member {
                target,
                field,
                field_span,
            } = &expr.kind
        {
            // As `member` reads them.
            if let Some((id, id_span)) = self.step_path(target) {
                let output = self.step_output(expr, target, id, id_span, field, *field_span);
                return (Cow::Borrowed(output.unwrap_or(&ANY)), 1);
            }
            if let Some(ty) = self.output_field(expr, target, field, *field_span) {
                return (ty, 2);
            }
        }
        let (ty, cost) = self.expr(expr);
        (Cow::Owned(ty), cost)
    }

    /// [`Typer::property`], borrowing the property's type from `ty` where it can.
    pub(super) fn property_cow<'x>(
        &mut self,
        ty: &'x Ty,
        name: &str,
        name_span: Span,
        whole: &Expr,
    ) -> Cow<'x, Ty> {
        if !ty.may_be(Kinds::OBJECT) {
            self.report(
                Code::UnknownProperty,
                name_span,
                format!("{} has no property `{name}`", ty.summary()),
            );
            return Cow::Owned(Ty::Any);
        }
        // An object schema that lists properties and leaves `additionalProperties` unset
        // says nothing of other names: reading one unguarded is almost always a typo.
        let typo = undeclared_by_default(ty, name) && !self.is_guarded(whole);
        match ty.property_cow(name).filter(|_| !typo) {
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
                Cow::Owned(Ty::Any)
            }
        }
    }

    /// The fix renaming the name at `span` (relative to the site's string) to `with`.
    /// Reports a name nobody defines, with `help`, and the fix to `to` (a suggestion that
    /// may stand here) when there is one.
    fn unknown(
        &mut self,
        code: Code,
        span: Span,
        message: String,
        help: String,
        to: Option<(&str, Applicability)>,
    ) {
        let fix = to.and_then(|(c, a)| self.name_fix(span, c, a));
        let finding = self.report(code, span, message);
        finding.help = Some(help);
        finding.fix = fix;
    }

    pub(super) fn name_fix(
        &self,
        span: Span,
        with: &str,
        applicability: Applicability,
    ) -> Option<Fix> {
        self.rewrite(span, with)
            .map(|fixed| Fix::replace(applicability, self.site.pointer, fixed))
    }

    /// The string at the site with the bytes at `span` replaced by `with`.
    pub(super) fn rewrite(&self, span: Span, with: &str) -> Option<String> {
        let text = self.site.node.as_str()?;
        Some(format!(
            "{}{with}{}",
            text.get(..span.start())?,
            text.get(span.end()..)?
        ))
    }

    pub(super) fn is_bound(&self, name: &str) -> bool {
        self.locals.iter().any(|(n, _)| n == name) || self.scope.vars.iter().any(|(n, _)| n == name)
    }

    pub(super) fn is_guarded(&self, expr: &Expr) -> bool {
        let Some(path) = path_of(expr) else {
            return false;
        };
        self.guarded
            .iter()
            .any(|g| *g == path || path.starts_with(&format!("{g}.")))
    }

    /// `steps.<id>` (with `steps` not a bound variable): the id and its span.
    pub(super) fn step_path<'e>(&self, expr: &'e Expr) -> Option<(&'e str, Span)> {
        let ExprKind::Member {
            target: root,
            field: id,
            field_span: id_span,
        } = &expr.kind
        else {
            return None;
        };
        let ExprKind::Ident { name } = &root.kind else {
            return None;
        };
        (name == "steps" && !self.is_bound("steps")).then_some((id.as_str(), *id_span))
    }

    /// `expr` is `target.<field>` with `target` `steps.<id>`: the output of step `id`, read
    /// where the scope keeps it, after reporting what is wrong with the read; `None` when
    /// there is nothing to read (reported).
    pub(super) fn step_output(
        &mut self,
        expr: &Expr,
        target: &Expr,
        id: &str,
        id_span: Span,
        field: &str,
        field_span: Span,
    ) -> Option<&'s Ty> {
        if self.checker.want_plan {
            self.types.insert(
                (target.span.start(), target.span.end()),
                format!("step {id}"),
            );
        }
        let info = self.step_ref(id, id_span)?;
        if field != "output" {
            self.report(
                Code::UnknownProperty,
                field_span,
                format!("steps have no `{field}`; read `steps.{id}.output`"),
            );
            return None;
        }
        let Some(output) = info.output.as_deref() else {
            self.report(
                Code::TypeMismatch,
                expr.span,
                format!("step `{id}` produces no output (`branch` and `loop` steps have none)"),
            );
            return None;
        };
        if info.maybe_absent && !self.is_guarded(expr) {
            self.report(
                Code::MaybeAbsentRead,
                expr.span,
                format!("step `{id}` may be skipped, so its output may be absent"),
            )
            .help = Some(format!("guard the read: `has(steps.{id}.output) ? … : …`"));
        }
        Some(output)
    }

    /// Resolves `steps.<id>`, reporting unknown and invisible steps; records the edge.
    pub(super) fn step_ref(&mut self, id: &str, span: Span) -> Option<&'s StepInfo<'d>> {
        let scope = self.scope;
        let found = scope.step(id);
        let source_span = self.span(span);
        match &found {
            Some(_) => self.checker.analysis.references.push(Reference {
                from_step: Arc::clone(&self.checker.current_step),
                to: id.into(),
                pointer: Arc::clone(
                    self.site
                        .shared_pointer
                        .get_or_init(|| Arc::from(self.site.pointer)),
                ),
                span: source_span,
            }),
            None if self.checker.ids.set().contains(id) => {
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
                // A fix only to a step this expression can read.
                let in_scope = suggest(id, self.scope.steps.iter().map(|s| s.id));
                let help = match in_scope
                    .or_else(|| suggest(id, self.checker.ids.in_order().iter().copied()))
                {
                    Some((c, _)) => format!("did you mean `{c}`?"),
                    None if visible.is_empty() => "no step is visible here".to_owned(),
                    None => format!("visible steps: {}", one_of(visible.iter().copied())),
                };
                self.unknown(
                    Code::UnknownStepReference,
                    span,
                    format!("no step has id `{id}`"),
                    help,
                    in_scope,
                );
            }
        }
        found
    }
}

/// The type of `schema` (resolving `$ref`s in `root`): exact for consumers of a value flow,
/// possibly over-approximated for producers. A schema outside the subset is dyn: the shape
/// validator reports it, and guessing its type would only add findings that follow from it.
pub(super) fn schema_ty(schema: &Node, root: &Node, exact: bool) -> Ty {
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

pub(super) fn param_kinds(p: Param) -> Kinds {
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

pub(super) fn param_ty(p: Param) -> Ty {
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

pub(super) fn int_ty() -> Ty {
    Ty::Int(Range::default())
}

pub(super) fn number_ty() -> Ty {
    Ty::Number(Range::default())
}

pub(super) fn string_ty() -> Ty {
    Ty::String(StringTy::default())
}

pub(super) fn list_of(items: Ty) -> Ty {
    Ty::List(Box::new(ListTy {
        items,
        ..ListTy::default()
    }))
}

/// The most elements a list of type `ty` can have, for cost bounds.
pub(super) fn list_bound(ty: &Ty) -> u64 {
    match ty {
        Ty::List(l) => l.max_items.unwrap_or(DEFAULT_LIST_BOUND),
        Ty::Literal(serde_json::Value::Array(a)) => a.len() as u64,
        _ => DEFAULT_LIST_BOUND,
    }
}

/// The size bound of a string or list, for linear functions.
pub(super) fn size_bound(ty: &Ty) -> u64 {
    match ty {
        Ty::String(s) => s.max_len.unwrap_or(DEFAULT_LIST_BOUND),
        Ty::Literal(serde_json::Value::String(s)) => s.chars().count() as u64,
        other => list_bound(other),
    }
}

/// Whether every object `ty` can be lists properties, leaves `additionalProperties` unset
/// and does not list `name`.
pub(super) fn undeclared_by_default(ty: &Ty, name: &str) -> bool {
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

pub(super) fn property_names(ty: &Ty) -> Vec<String> {
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
pub(super) fn path_of(expr: &Expr) -> Option<String> {
    match &expr.kind {
        ExprKind::Ident { name } => Some(name.clone()),
        ExprKind::Member { target, field, .. } => Some(format!("{}.{field}", path_of(target)?)),
        _ => None,
    }
}

/// The paths a condition proves present: `has(a.b)`, and each side of `&&`.
pub(super) fn has_guards(condition: &Expr) -> Vec<String> {
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
