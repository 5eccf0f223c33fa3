//! Typing function calls and macros against the whitelist's signatures.

use super::typer::*;
use super::*;

impl Typer<'_, '_, '_, '_, '_> {
    pub(super) fn call(
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
                let suggestion = suggest(name, functions::FUNCTIONS.iter().map(|f| f.name));
                let help = match suggestion {
                    Some((c, _)) => {
                        format!("did you mean `{c}`? `lwirc explain functions` lists the whitelist")
                    }
                    None => "`lwirc explain functions` lists the functions expressions may call"
                        .to_owned(),
                };
                // Certain only when the function is called the way the suggestion is.
                let fix = suggestion.and_then(|(c, a)| {
                    let style = functions::function(c)?.style;
                    let fits = matches!(
                        (style, target.is_some()),
                        (Style::Both, _) | (Style::Method, true) | (Style::Global, false)
                    );
                    let a = if fits {
                        a
                    } else {
                        Applicability::MaybeIncorrect
                    };
                    self.name_fix(name_span, c, a)
                });
                let finding = self.report(
                    Code::UnknownFunction,
                    name_span,
                    format!("`{name}` is not a whitelisted function"),
                );
                finding.help = Some(help);
                finding.fix = fix;
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
        let (st, sc) = self.expr_cow(subject);
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

    pub(super) fn macro_call(
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
        let (lt, lc) = self.expr_cow(list);
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
        let bound = list_bound(&lt);
        // Only `filter` gives back the list's own type: the others take its elements.
        let (element, lt) = match lt {
            _ if name == "filter" => (lt.element().unwrap_or(Ty::Any), Some(lt)),
            Cow::Owned(t) => (t.into_element().unwrap_or(Ty::Any), None),
            Cow::Borrowed(t) => (t.element().unwrap_or(Ty::Any), None),
        };
        if self.checker.want_plan {
            self.types
                .insert((var.span.start(), var.span.end()), element.display());
        }
        self.locals.push((var_name.clone(), element));
        let (bt, bc) = self.expr(body);
        self.locals.pop();
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
                lt.map_or(Ty::Any, Cow::into_owned)
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
}
