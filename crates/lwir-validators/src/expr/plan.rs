//! The compiled expression plan: each expression's typed nodes, flat, and their types
//! written once.

use super::*;

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

    pub(super) fn intern(&mut self, ty: &str) -> usize {
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

impl Typer<'_, '_, '_, '_, '_> {
    /// Appends the typed nodes of `expr` to `nodes`, children first; returns the index of
    /// its root. Recursion is bounded by the parser's `MAX_DEPTH`.
    pub(super) fn flatten(&mut self, expr: &Expr, nodes: &mut Vec<serde_json::Value>) -> usize {
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
