//! A registered version compiled for running: every step with its fields parsed once
//! (expressions and templates included), and its dependencies as edges between the steps
//! of one list.
//!
//! A step waits for the steps it reads (`steps.<id>` in any of its expressions, nested steps
//! included) and those it names in `after`. An edge between two steps of different lists
//! becomes an edge between their ancestors in the deepest list they share, so a step inside
//! a `map` that reads a step after the map makes the map wait for it.

use std::collections::{BTreeSet, HashMap};

use lwir_spec::expr::{Expr, ExprKind, Part, StringValue, parse_string_value};
use lwir_spec::ir::{Draft, StepKind};
use lwir_spec::{Node, pointer};
use serde_json::Value;

/// An LWIR value of a draft, compiled: literals, expressions (`${ … }`) and templates.
#[derive(Clone, Debug)]
pub(crate) enum VTree {
    /// A literal (no string inside it interpolates).
    Literal(Value),
    /// Exactly `${ expr }`.
    Expr {
        /// The parsed expression.
        expr: Expr,
        /// Its text, for messages.
        source: String,
    },
    /// Text with interpolations.
    Template {
        /// Text and expressions.
        parts: Vec<Part>,
        /// The whole string, for messages.
        source: String,
    },
    /// An array with something to evaluate inside.
    Array(Vec<VTree>),
    /// An object with something to evaluate inside.
    Object(Vec<(String, VTree)>),
}

/// A compiled value and the step ids its expressions read.
#[derive(Clone, Debug)]
pub(crate) struct Compiled {
    pub(crate) tree: VTree,
    /// Step ids read as `steps.<id>`, sorted, without repeats.
    pub(crate) reads: Vec<String>,
}

/// One step, compiled.
#[derive(Debug)]
pub(crate) struct Step {
    pub(crate) id: String,
    pub(crate) kind: StepKind,
    /// Pointer to the step in the LWIR, which names its schemas in the run's cache.
    pub(crate) pointer: String,
    pub(crate) when: Option<Compiled>,
    /// The ids its `after` names.
    pub(crate) after: Vec<String>,
    pub(crate) max_attempts: u32,
    /// Indices of the steps of the same list this one waits for.
    pub(crate) deps: Vec<usize>,
    /// Indices of the steps of the same list that wait for this one.
    pub(crate) dependents: Vec<usize>,
    pub(crate) body: Body,
}

/// What a step does, by kind.
#[derive(Debug)]
pub(crate) enum Body {
    Tool {
        tool: String,
        args: Compiled,
    },
    Model {
        slot: String,
        prompt: Compiled,
        system: Option<Compiled>,
        tools: Vec<String>,
        output: Value,
    },
    Code {
        language: String,
        body: String,
        input: Option<Compiled>,
        output: Value,
    },
    Map {
        over: Compiled,
        var: String,
        steps: Vec<Step>,
        result: Compiled,
        max_parallel: Option<u32>,
    },
    Reduce {
        over: Compiled,
        init: Compiled,
        acc: String,
        var: String,
        with: Compiled,
    },
    Branch {
        cases: Vec<(Compiled, Vec<Step>)>,
        default: Vec<Step>,
    },
    Loop {
        steps: Vec<Step>,
        until: Compiled,
        max_iterations: u32,
    },
}

/// A version, compiled.
#[derive(Debug)]
pub(crate) struct Program {
    pub(crate) steps: Vec<Step>,
    pub(crate) output: Option<Compiled>,
    /// Every tool id a step calls or a model may call, sorted.
    pub(crate) tools: Vec<String>,
    /// Every model slot a step uses, sorted.
    pub(crate) slots: Vec<String>,
}

/// Why a version cannot be compiled for running (it was registered valid, so this is a
/// record from another lwirc or a damaged store).
pub(crate) type CompileError = String;

impl Program {
    /// Compiles the draft rooted at `root`.
    pub(crate) fn compile(root: &Node) -> Result<Program, CompileError> {
        let draft = Draft::new(root);
        let mut tools = BTreeSet::new();
        let mut slots = BTreeSet::new();
        let mut steps = list(&draft.steps, &mut tools, &mut slots)?;
        let output = root
            .get("output")
            .map(|n| value(n, "/output"))
            .transpose()?;
        link(&mut steps);
        Ok(Program {
            steps,
            output,
            tools: tools.into_iter().collect(),
            slots: slots.into_iter().collect(),
        })
    }
}

fn list(
    steps: &[lwir_spec::ir::Step<'_>],
    tools: &mut BTreeSet<String>,
    slots: &mut BTreeSet<String>,
) -> Result<Vec<Step>, CompileError> {
    steps.iter().map(|s| step(s, tools, slots)).collect()
}

fn step(
    s: &lwir_spec::ir::Step<'_>,
    tools: &mut BTreeSet<String>,
    slots: &mut BTreeSet<String>,
) -> Result<Step, CompileError> {
    let at = &s.pointer;
    let missing = |field: &str| format!("step at `{at}` has no valid `{field}`");
    let id = s.id().ok_or_else(|| missing("id"))?.to_owned();
    let kind = s.kind.ok_or_else(|| missing("kind"))?;
    let text = |field: &str| -> Result<String, CompileError> {
        Ok(s.field(field)
            .and_then(Node::as_str)
            .ok_or_else(|| missing(field))?
            .to_owned())
    };
    let compiled = |field: &str| -> Result<Compiled, CompileError> {
        value(
            s.field(field).ok_or_else(|| missing(field))?,
            &s.pointer_to(field),
        )
    };
    let optional = |field: &str| -> Result<Option<Compiled>, CompileError> {
        s.field(field)
            .map(|n| value(n, &s.pointer_to(field)))
            .transpose()
    };
    let schema = |field: &str| s.field(field).map_or(Value::Null, Node::to_json);
    let count = |node: Option<&Node>| {
        node.and_then(Node::as_i64)
            .and_then(|n| u32::try_from(n).ok())
    };
    let nested = |steps: &[lwir_spec::ir::Step<'_>],
                  tools: &mut BTreeSet<String>,
                  slots: &mut BTreeSet<String>|
     -> Result<Vec<Step>, CompileError> {
        let mut out = list(steps, tools, slots)?;
        link(&mut out);
        Ok(out)
    };
    let nested_at = |suffix: &str| -> &[lwir_spec::ir::Step<'_>] {
        let p = format!("{}{suffix}", s.pointer);
        s.nested().find(|l| l.pointer == p).map_or(&[], |l| l.steps)
    };
    let body = match kind {
        StepKind::ToolCall => {
            let tool = text("tool")?;
            tools.insert(tool.clone());
            let args = match s.field("args") {
                Some(n) => value(n, &s.pointer_to("args"))?,
                None => Compiled {
                    tree: VTree::Literal(Value::Object(Default::default())),
                    reads: Vec::new(),
                },
            };
            Body::Tool { tool, args }
        }
        StepKind::ModelCall => {
            let slot = text("model")?;
            slots.insert(slot.clone());
            let listed: Vec<String> = s
                .field("tools")
                .and_then(Node::as_array)
                .unwrap_or_default()
                .iter()
                .filter_map(Node::as_str)
                .map(str::to_owned)
                .collect();
            tools.extend(listed.iter().cloned());
            Body::Model {
                slot,
                prompt: compiled("prompt")?,
                system: optional("system")?,
                tools: listed,
                output: schema("output"),
            }
        }
        StepKind::CodeRun => Body::Code {
            language: text("language")?,
            body: text("body")?,
            input: optional("input")?,
            output: schema("output"),
        },
        StepKind::Map => Body::Map {
            over: compiled("over")?,
            var: text("as")?,
            steps: nested(nested_at("/steps"), tools, slots)?,
            result: compiled("result")?,
            max_parallel: count(s.field("max_parallel")),
        },
        StepKind::Reduce => Body::Reduce {
            over: compiled("over")?,
            init: compiled("init")?,
            acc: text("acc")?,
            var: text("as")?,
            with: compiled("with")?,
        },
        StepKind::Branch => {
            let mut cases = Vec::new();
            for (i, case) in s
                .field("cases")
                .and_then(Node::as_array)
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                let case_at = pointer::join_index(&s.pointer_to("cases"), i);
                let when = case
                    .get("when")
                    .ok_or_else(|| format!("case at `{case_at}` has no `when`"))?;
                let when = value(when, &pointer::join(&case_at, "when"))?;
                let steps = nested(nested_at(&format!("/cases/{i}/steps")), tools, slots)?;
                cases.push((when, steps));
            }
            Body::Branch {
                cases,
                default: nested(nested_at("/default"), tools, slots)?,
            }
        }
        StepKind::Loop => Body::Loop {
            steps: nested(nested_at("/steps"), tools, slots)?,
            until: compiled("until")?,
            max_iterations: count(s.field("max_iterations"))
                .ok_or_else(|| missing("max_iterations"))?,
        },
    };
    Ok(Step {
        id,
        kind,
        pointer: s.pointer.clone(),
        when: optional("when")?,
        after: s
            .field("after")
            .and_then(Node::as_array)
            .unwrap_or_default()
            .iter()
            .filter_map(Node::as_str)
            .map(str::to_owned)
            .collect(),
        max_attempts: count(s.field("retry").and_then(|r| r.get("max_attempts")))
            .unwrap_or(1)
            .max(1),
        deps: Vec::new(),
        dependents: Vec::new(),
        body,
    })
}

/// `node` (at `at` in the draft) as a compiled value.
pub(crate) fn value(node: &Node, at: &str) -> Result<Compiled, CompileError> {
    let mut reads = BTreeSet::new();
    let tree = tree(node, at, &mut reads)?;
    Ok(Compiled {
        tree,
        reads: reads.into_iter().collect(),
    })
}

fn tree(node: &Node, at: &str, reads: &mut BTreeSet<String>) -> Result<VTree, CompileError> {
    use lwir_spec::document::Value as V;
    Ok(match &node.value {
        V::String(text) => match parse_string_value(text)
            .map_err(|e| format!("`{at}` does not parse: {}", e.message))?
        {
            StringValue::Literal(s) => VTree::Literal(Value::String(s)),
            StringValue::Expression(expr) => {
                step_reads(&expr, reads);
                VTree::Expr {
                    expr,
                    source: text.to_string(),
                }
            }
            StringValue::Template(parts) => {
                for part in &parts {
                    if let Part::Expr(e) = part {
                        step_reads(e, reads);
                    }
                }
                VTree::Template {
                    parts,
                    source: text.to_string(),
                }
            }
        },
        V::Array(items) => {
            let items = items
                .iter()
                .enumerate()
                .map(|(i, n)| tree(n, &pointer::join_index(at, i), reads))
                .collect::<Result<Vec<_>, _>>()?;
            if items.iter().all(|t| matches!(t, VTree::Literal(_))) {
                VTree::Literal(node.to_json())
            } else {
                VTree::Array(items)
            }
        }
        V::Object(members) => {
            let items = members
                .iter()
                .map(|m| {
                    Ok((
                        m.key.to_string(),
                        tree(&m.value, &pointer::join(at, &m.key), reads)?,
                    ))
                })
                .collect::<Result<Vec<_>, CompileError>>()?;
            if items.iter().all(|(_, t)| matches!(t, VTree::Literal(_))) {
                VTree::Literal(node.to_json())
            } else {
                VTree::Object(items)
            }
        }
        _ => VTree::Literal(node.to_json()),
    })
}

/// The ids of `steps.<id>` read anywhere in `expr`.
fn step_reads(expr: &Expr, reads: &mut BTreeSet<String>) {
    match &expr.kind {
        ExprKind::Member { target, field, .. } if matches!(&target.kind, ExprKind::Ident { name } if name == "steps") =>
        {
            reads.insert(field.clone());
        }
        _ => expr.children(&mut |e| step_reads(e, reads)),
    }
}

impl Step {
    /// Every value of this step's own fields (not of nested steps).
    fn own_values(&self) -> Vec<&Compiled> {
        let mut out: Vec<&Compiled> = self.when.iter().collect();
        match &self.body {
            Body::Tool { args, .. } => out.push(args),
            Body::Model { prompt, system, .. } => {
                out.push(prompt);
                out.extend(system.iter());
            }
            Body::Code { input, .. } => out.extend(input.iter()),
            Body::Map { over, result, .. } => {
                out.push(over);
                out.push(result);
            }
            Body::Reduce {
                over, init, with, ..
            } => {
                out.push(over);
                out.push(init);
                out.push(with);
            }
            Body::Branch { cases, .. } => out.extend(cases.iter().map(|(w, _)| w)),
            Body::Loop { until, .. } => out.push(until),
        }
        out
    }

    /// The lists of steps nested in this one.
    pub(crate) fn nested(&self) -> Vec<&[Step]> {
        match &self.body {
            Body::Map { steps, .. } | Body::Loop { steps, .. } => vec![steps],
            Body::Branch { cases, default } => cases
                .iter()
                .map(|(_, s)| s.as_slice())
                .chain(std::iter::once(default.as_slice()))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Every step id this step and the steps nested in it read or name in `after`.
    fn reads_deep(&self, out: &mut BTreeSet<String>) {
        for v in self.own_values() {
            out.extend(v.reads.iter().cloned());
        }
        out.extend(self.after.iter().cloned());
        for list in self.nested() {
            for s in list {
                s.reads_deep(out);
            }
        }
    }

    /// This step's id and those of every step nested in it.
    fn ids_deep(&self, out: &mut Vec<String>) {
        out.push(self.id.clone());
        for list in self.nested() {
            for s in list {
                s.ids_deep(out);
            }
        }
    }
}

/// Computes the edges between the steps of `steps`: step `i` waits for step `j` when `i`
/// (or a step nested in it) reads or names in `after` `j` (or a step nested in `j`).
/// Nested lists were linked when they were compiled.
fn link(steps: &mut [Step]) {
    // Whose ids live where: every id of the list's subtrees, by the index of the subtree.
    let mut owner: HashMap<String, usize> = HashMap::new();
    for (i, s) in steps.iter().enumerate() {
        let mut ids = Vec::new();
        s.ids_deep(&mut ids);
        for id in ids {
            owner.insert(id, i);
        }
    }
    let mut deps: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); steps.len()];
    for (i, s) in steps.iter().enumerate() {
        let mut names = BTreeSet::new();
        s.reads_deep(&mut names);
        for name in names {
            if let Some(&j) = owner.get(&name)
                && j != i
            {
                deps[i].insert(j);
            }
        }
    }
    apply(steps, deps);
}

fn apply(steps: &mut [Step], deps: Vec<BTreeSet<usize>>) {
    for s in steps.iter_mut() {
        s.dependents.clear();
    }
    for (i, d) in deps.into_iter().enumerate() {
        steps[i].deps = d.into_iter().collect();
    }
    for i in 0..steps.len() {
        for j in steps[i].deps.clone() {
            steps[j].dependents.push(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_reads_are_the_ids_under_steps_anywhere() {
        let e = lwir_spec::expr::parse_expression(
            "steps.a.output.x + size([steps.b, {input.k: steps.c.output}].filter(s, s == steps.d)) > 0 ? steps.e : input.steps",
        )
        .unwrap();
        let mut reads = BTreeSet::new();
        step_reads(&e, &mut reads);
        assert_eq!(
            reads.into_iter().collect::<Vec<_>>(),
            ["a", "b", "c", "d", "e"]
        );
    }
}
