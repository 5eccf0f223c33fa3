//! Typed views of LWIR drafts and WorkflowDefinitions over a spanned document.
//!
//! Building a view never fails: a field that is missing or of the wrong JSON type is simply
//! absent here, and the shape validator reports it. Views borrow the document's nodes, so
//! every field still has its span, and each step carries its JSON Pointer.

use crate::document::{Node, Value};
use crate::pointer;

/// The largest `code.run` body, in bytes of UTF-8.
pub const MAX_CODE_BODY_BYTES: usize = 64 * 1024;

/// The LWIR versions this crate implements.
pub const LWIR_VERSION: &str = "1";

/// Fields every step may have, whatever its kind.
pub const COMMON_STEP_FIELDS: &[&str] = &["id", "kind", "after", "when", "description", "retry"];

/// The kinds of step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StepKind {
    /// `tool.call`: call an allowlisted tool.
    ToolCall,
    /// `model.call`: prompt a model slot for a schema-shaped answer.
    ModelCall,
    /// `code.run`: run a small, size-bounded body of code.
    CodeRun,
    /// `map`: run nested steps once per item of a list.
    Map,
    /// `reduce`: fold a list into one value with an expression.
    Reduce,
    /// `branch`: run the steps of the first case whose condition holds.
    Branch,
    /// `loop`: repeat nested steps until a condition holds, at most `max_iterations` times.
    Loop,
}

impl StepKind {
    /// Every kind.
    pub const ALL: &'static [StepKind] = &[
        StepKind::ToolCall,
        StepKind::ModelCall,
        StepKind::CodeRun,
        StepKind::Map,
        StepKind::Reduce,
        StepKind::Branch,
        StepKind::Loop,
    ];

    /// The `kind` string.
    pub const fn as_str(self) -> &'static str {
        match self {
            StepKind::ToolCall => "tool.call",
            StepKind::ModelCall => "model.call",
            StepKind::CodeRun => "code.run",
            StepKind::Map => "map",
            StepKind::Reduce => "reduce",
            StepKind::Branch => "branch",
            StepKind::Loop => "loop",
        }
    }

    /// The kind named `text`.
    pub fn parse(text: &str) -> Option<StepKind> {
        StepKind::ALL.iter().copied().find(|k| k.as_str() == text)
    }

    /// The fields this kind adds to [`COMMON_STEP_FIELDS`].
    pub const fn fields(self) -> &'static [&'static str] {
        match self {
            StepKind::ToolCall => &["tool", "args"],
            StepKind::ModelCall => &["model", "prompt", "system", "requires", "tools", "output"],
            StepKind::CodeRun => &["language", "body", "input", "output"],
            StepKind::Map => &["over", "as", "steps", "result", "max_parallel"],
            StepKind::Reduce => &["over", "init", "acc", "as", "with"],
            StepKind::Branch => &["cases", "default"],
            StepKind::Loop => &["steps", "until", "max_iterations"],
        }
    }
}

/// Quality tiers of model slots, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Quality {
    /// `basic`.
    Basic,
    /// `standard`.
    Standard,
    /// `high`.
    High,
    /// `frontier`.
    Frontier,
}

impl Quality {
    /// The tier named `text`.
    pub fn parse(text: &str) -> Option<Quality> {
        Some(match text {
            "basic" => Quality::Basic,
            "standard" => Quality::Standard,
            "high" => Quality::High,
            "frontier" => Quality::Frontier,
            _ => return None,
        })
    }

    /// The tier's name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Quality::Basic => "basic",
            Quality::Standard => "standard",
            Quality::High => "high",
            Quality::Frontier => "frontier",
        }
    }
}

/// An LWIR draft.
#[derive(Debug)]
pub struct Draft<'d> {
    /// The document root.
    pub root: &'d Node,
    /// The top-level steps.
    pub steps: Vec<Step<'d>>,
}

impl<'d> Draft<'d> {
    /// The view of the draft rooted at `root`.
    pub fn new(root: &'d Node) -> Self {
        Self {
            root,
            steps: steps_at(root.get("steps"), "/steps"),
        }
    }

    /// `lwir`, when it is a string.
    pub fn lwir(&self) -> Option<&'d Node> {
        self.root.get("lwir")
    }

    /// `workflow`.
    pub fn workflow(&self) -> Option<&'d Node> {
        self.root.get("workflow")
    }

    /// Visits every step, nested ones included, in document order (depth first).
    pub fn walk<'a>(&'a self, visit: &mut impl FnMut(&'a Step<'d>)) {
        fn go<'a, 'd>(steps: &'a [Step<'d>], visit: &mut impl FnMut(&'a Step<'d>)) {
            for step in steps {
                visit(step);
                for list in step.nested() {
                    go(list.steps, visit);
                }
            }
        }
        go(&self.steps, visit);
    }
}

/// One step of a draft.
#[derive(Debug)]
pub struct Step<'d> {
    /// The step object.
    pub node: &'d Node,
    /// Pointer to the step object.
    pub pointer: String,
    /// The parsed `kind`, when it is a known one.
    pub kind: Option<StepKind>,
    /// Steps nested under `steps`, `cases/N/steps` and `default`.
    nested: Vec<(String, Vec<Step<'d>>)>,
}

/// A list of steps nested in a step, with the pointer of the list.
#[derive(Debug, Clone, Copy)]
pub struct StepList<'a, 'd> {
    /// Pointer to the JSON array.
    pub pointer: &'a str,
    /// The steps.
    pub steps: &'a [Step<'d>],
}

impl<'d> Step<'d> {
    /// The value of field `name`.
    pub fn field(&self, name: &str) -> Option<&'d Node> {
        self.node.get(name)
    }

    /// The pointer to field `name` of this step.
    pub fn pointer_to(&self, name: &str) -> String {
        pointer::join(&self.pointer, name)
    }

    /// The `id`, when it is a string.
    pub fn id(&self) -> Option<&'d str> {
        self.field("id")?.as_str()
    }

    /// The lists of steps nested in this one.
    pub fn nested(&self) -> impl Iterator<Item = StepList<'_, 'd>> {
        self.nested
            .iter()
            .map(|(pointer, steps)| StepList { pointer, steps })
    }
}

fn steps_at<'d>(list: Option<&'d Node>, list_pointer: &str) -> Vec<Step<'d>> {
    let Some(items) = list.and_then(Node::as_array) else {
        return Vec::new();
    };
    items
        .iter()
        .enumerate()
        .filter(|(_, n)| matches!(n.value, Value::Object(_)))
        .map(|(i, node)| step(node, pointer::join_index(list_pointer, i)))
        .collect()
}

fn step(node: &Node, pointer: String) -> Step<'_> {
    let kind = node
        .get("kind")
        .and_then(Node::as_str)
        .and_then(StepKind::parse);
    let mut nested = Vec::new();
    match kind {
        Some(StepKind::Map | StepKind::Loop) => {
            let p = pointer::join(&pointer, "steps");
            nested.push((p.clone(), steps_at(node.get("steps"), &p)));
        }
        Some(StepKind::Branch) => {
            if let Some(cases) = node.get("cases").and_then(Node::as_array) {
                for (i, case) in cases.iter().enumerate() {
                    let p = pointer::join(
                        &pointer::join_index(&pointer::join(&pointer, "cases"), i),
                        "steps",
                    );
                    nested.push((p.clone(), steps_at(case.get("steps"), &p)));
                }
            }
            let p = pointer::join(&pointer, "default");
            nested.push((p.clone(), steps_at(node.get("default"), &p)));
        }
        _ => {}
    }
    nested.retain(|(_, steps)| !steps.is_empty());
    Step {
        node,
        pointer,
        kind,
        nested,
    }
}

/// A WorkflowDefinition.
#[derive(Debug)]
pub struct Definition<'d> {
    /// The document root.
    pub root: &'d Node,
    /// The model slots, in document order.
    pub models: Vec<ModelSlot<'d>>,
    /// The allowlisted tools, in document order.
    pub tools: Vec<Tool<'d>>,
    /// The limits, defaults filled in.
    pub limits: Limits,
}

impl<'d> Definition<'d> {
    /// The view of the definition rooted at `root`.
    pub fn new(root: &'d Node) -> Self {
        let members = |key: &str| root.get(key).and_then(Node::as_object).unwrap_or_default();
        let models = members("models")
            .iter()
            .map(|m| ModelSlot {
                id: &m.key,
                pointer: pointer::join("/models", &m.key),
                node: &m.value,
            })
            .collect();
        let tools = members("tools")
            .iter()
            .map(|m| Tool {
                id: &m.key,
                pointer: pointer::join("/tools", &m.key),
                node: &m.value,
            })
            .collect();
        let limits = root.get("limits");
        let limit = |key: &str, default: u64| {
            limits
                .and_then(|l| l.get(key))
                .and_then(Node::as_i64)
                .and_then(|v| u64::try_from(v).ok())
                .unwrap_or(default)
        };
        Self {
            root,
            models,
            tools,
            limits: Limits {
                max_steps: limit("max_steps", Limits::DEFAULT.max_steps),
                max_parallel: limit("max_parallel", Limits::DEFAULT.max_parallel),
                max_loop_iterations: limit(
                    "max_loop_iterations",
                    Limits::DEFAULT.max_loop_iterations,
                ),
            },
        }
    }

    /// `name`, when it is a string.
    pub fn name(&self) -> Option<&'d str> {
        self.root.get("name")?.as_str()
    }

    /// The tool with id `id`.
    pub fn tool(&self, id: &str) -> Option<&Tool<'d>> {
        self.tools.iter().find(|t| t.id == id)
    }

    /// The model slot with id `id`.
    pub fn model(&self, id: &str) -> Option<&ModelSlot<'d>> {
        self.models.iter().find(|m| m.id == id)
    }
}

/// A model slot of a definition.
#[derive(Debug)]
pub struct ModelSlot<'d> {
    /// Its id (the key under `models`).
    pub id: &'d str,
    /// Pointer to the slot object.
    pub pointer: String,
    /// The slot object.
    pub node: &'d Node,
}

impl ModelSlot<'_> {
    /// The slot's quality tier, when it is a known one.
    pub fn quality(&self) -> Option<Quality> {
        Quality::parse(self.node.get("quality")?.as_str()?)
    }

    /// The slot's capabilities.
    pub fn capabilities(&self) -> impl Iterator<Item = &str> {
        self.node
            .get("capabilities")
            .and_then(Node::as_array)
            .unwrap_or_default()
            .iter()
            .filter_map(Node::as_str)
    }

    /// Whether the slot has capability `name`.
    pub fn has_capability(&self, name: &str) -> bool {
        self.capabilities().any(|c| c == name)
    }

    /// The slot's context window, in tokens.
    pub fn context_tokens(&self) -> Option<i64> {
        self.node.get("context_tokens")?.as_i64()
    }
}

/// An allowlisted tool of a definition.
#[derive(Debug)]
pub struct Tool<'d> {
    /// Its id (the key under `tools`).
    pub id: &'d str,
    /// Pointer to the tool object.
    pub pointer: String,
    /// The tool object.
    pub node: &'d Node,
}

impl<'d> Tool<'d> {
    /// The input schema.
    pub fn input(&self) -> Option<&'d Node> {
        self.node.get("input")
    }

    /// The output schema.
    pub fn output(&self) -> Option<&'d Node> {
        self.node.get("output")
    }
}

/// The bounds a definition sets on its drafts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most steps in a draft, nested ones included.
    pub max_steps: u64,
    /// Most items a `map` may run at once.
    pub max_parallel: u64,
    /// Largest `max_iterations` of a `loop`.
    pub max_loop_iterations: u64,
}

impl Limits {
    /// The limits of a definition that sets none.
    pub const DEFAULT: Limits = Limits {
        max_steps: 1000,
        max_parallel: 16,
        max_loop_iterations: 1000,
    };
}
