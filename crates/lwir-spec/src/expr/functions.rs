//! The whitelist: every function and macro an expression may call. Anything else is a
//! finding. Every function terminates, and its cost is bounded by the size of its inputs
//! ([`CostClass`]), so the cost of a whole expression can be bounded before it runs.

/// How a function's cost grows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CostClass {
    /// A fixed cost.
    Constant,
    /// Linear in the size of its receiver or first argument (string length, list length).
    Linear,
    /// A macro: runs its body once per list element.
    PerElement,
}

/// How a function is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// `f(x)` only.
    Global,
    /// `x.f()` only.
    Method,
    /// Either `f(x)` or `x.f()`.
    Both,
}

/// A parameter or result type of a function signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// Any value.
    Any,
    /// `null`, a boolean, a number or a string.
    Scalar,
    /// A boolean.
    Bool,
    /// An integer.
    Int,
    /// A double (integers are accepted).
    Double,
    /// A string.
    String,
    /// A string, a list or a map.
    Sized,
    /// A list of strings.
    ListOfString,
    /// A list of anything.
    List,
}

impl Param {
    /// The name used in docs and messages.
    pub const fn as_str(self) -> &'static str {
        match self {
            Param::Any => "any",
            Param::Scalar => "scalar",
            Param::Bool => "bool",
            Param::Int => "int",
            Param::Double => "double",
            Param::String => "string",
            Param::Sized => "string | list | map",
            Param::ListOfString => "list<string>",
            Param::List => "list",
        }
    }
}

/// One way to call a function.
#[derive(Clone, Copy, Debug)]
pub struct Signature {
    /// The receiver (for method calls) or first argument (for global calls).
    pub subject: Param,
    /// The remaining parameters.
    pub params: &'static [Param],
    /// The result.
    pub result: Param,
}

/// A whitelisted function or macro.
#[derive(Clone, Copy, Debug)]
pub struct Function {
    /// Its name.
    pub name: &'static str,
    /// How it is called.
    pub style: Style,
    /// Its signatures.
    pub signatures: &'static [Signature],
    /// How its cost grows.
    pub cost: CostClass,
    /// Whether it is a macro (its arguments are not evaluated first: `has`, `map`, …).
    pub is_macro: bool,
    /// One line on what it does.
    pub doc: &'static str,
}

const fn sig(subject: Param, params: &'static [Param], result: Param) -> Signature {
    Signature {
        subject,
        params,
        result,
    }
}

/// The whitelist.
pub const FUNCTIONS: &[Function] = &[
    Function {
        name: "size",
        style: Style::Both,
        signatures: &[sig(Param::Sized, &[], Param::Int)],
        cost: CostClass::Constant,
        is_macro: false,
        doc: "length of a string (in characters), list or map",
    },
    Function {
        name: "has",
        style: Style::Global,
        signatures: &[sig(Param::Any, &[], Param::Bool)],
        cost: CostClass::Constant,
        is_macro: true,
        doc: "`has(a.b)`: whether field `b` of `a` is present (the one safe way to read a maybe-absent field)",
    },
    Function {
        name: "string",
        style: Style::Global,
        signatures: &[sig(Param::Scalar, &[], Param::String)],
        cost: CostClass::Linear,
        is_macro: false,
        doc: "a scalar as a string",
    },
    Function {
        name: "int",
        style: Style::Global,
        signatures: &[
            sig(Param::String, &[], Param::Int),
            sig(Param::Double, &[], Param::Int),
        ],
        cost: CostClass::Linear,
        is_macro: false,
        doc: "a string or double as an integer (doubles truncate toward zero)",
    },
    Function {
        name: "double",
        style: Style::Global,
        signatures: &[
            sig(Param::String, &[], Param::Double),
            sig(Param::Double, &[], Param::Double),
        ],
        cost: CostClass::Linear,
        is_macro: false,
        doc: "a string or integer as a double",
    },
    Function {
        name: "contains",
        style: Style::Method,
        signatures: &[sig(Param::String, &[Param::String], Param::Bool)],
        cost: CostClass::Linear,
        is_macro: false,
        doc: "`s.contains(t)`: whether `t` occurs in `s`",
    },
    Function {
        name: "startsWith",
        style: Style::Method,
        signatures: &[sig(Param::String, &[Param::String], Param::Bool)],
        cost: CostClass::Linear,
        is_macro: false,
        doc: "`s.startsWith(t)`",
    },
    Function {
        name: "endsWith",
        style: Style::Method,
        signatures: &[sig(Param::String, &[Param::String], Param::Bool)],
        cost: CostClass::Linear,
        is_macro: false,
        doc: "`s.endsWith(t)`",
    },
    Function {
        name: "lower",
        style: Style::Method,
        signatures: &[sig(Param::String, &[], Param::String)],
        cost: CostClass::Linear,
        is_macro: false,
        doc: "`s.lower()`: lower case",
    },
    Function {
        name: "upper",
        style: Style::Method,
        signatures: &[sig(Param::String, &[], Param::String)],
        cost: CostClass::Linear,
        is_macro: false,
        doc: "`s.upper()`: upper case",
    },
    Function {
        name: "trim",
        style: Style::Method,
        signatures: &[sig(Param::String, &[], Param::String)],
        cost: CostClass::Linear,
        is_macro: false,
        doc: "`s.trim()`: without leading and trailing white space",
    },
    Function {
        name: "join",
        style: Style::Method,
        signatures: &[
            sig(Param::ListOfString, &[], Param::String),
            sig(Param::ListOfString, &[Param::String], Param::String),
        ],
        cost: CostClass::Linear,
        is_macro: false,
        doc: "`xs.join()` / `xs.join(sep)`: the strings of a list, joined",
    },
    Function {
        name: "split",
        style: Style::Method,
        signatures: &[sig(Param::String, &[Param::String], Param::ListOfString)],
        cost: CostClass::Linear,
        is_macro: false,
        doc: "`s.split(sep)`: the parts of `s` between occurrences of `sep`",
    },
    Function {
        name: "matches",
        style: Style::Both,
        signatures: &[sig(Param::String, &[Param::String], Param::Bool)],
        cost: CostClass::Linear,
        is_macro: false,
        doc: "`s.matches(re)`: whether `s` matches the RE2 regular expression `re` (linear time)",
    },
    Function {
        name: "map",
        style: Style::Method,
        signatures: &[sig(Param::List, &[Param::Any, Param::Any], Param::List)],
        cost: CostClass::PerElement,
        is_macro: true,
        doc: "`xs.map(x, e)`: the list of `e` for each element `x`",
    },
    Function {
        name: "filter",
        style: Style::Method,
        signatures: &[sig(Param::List, &[Param::Any, Param::Bool], Param::List)],
        cost: CostClass::PerElement,
        is_macro: true,
        doc: "`xs.filter(x, p)`: the elements `x` for which `p` holds",
    },
    Function {
        name: "all",
        style: Style::Method,
        signatures: &[sig(Param::List, &[Param::Any, Param::Bool], Param::Bool)],
        cost: CostClass::PerElement,
        is_macro: true,
        doc: "`xs.all(x, p)`: whether `p` holds for every element",
    },
    Function {
        name: "exists",
        style: Style::Method,
        signatures: &[sig(Param::List, &[Param::Any, Param::Bool], Param::Bool)],
        cost: CostClass::PerElement,
        is_macro: true,
        doc: "`xs.exists(x, p)`: whether `p` holds for some element",
    },
];

/// Names that reach outside the sandbox: I/O, the process, the environment, secrets, code
/// loading. They are never functions or roots of LWIR, and get their own finding.
pub(crate) const SANDBOX_ESCAPES: &[&str] = &[
    "env",
    "environ",
    "getenv",
    "secret",
    "secrets",
    "process",
    "globalThis",
    "global",
    "window",
    "self",
    "document",
    "import",
    "require",
    "module",
    "exports",
    "eval",
    "Function",
    "constructor",
    "__proto__",
    "prototype",
    "fetch",
    "http",
    "https",
    "net",
    "socket",
    "exec",
    "spawn",
    "system",
    "shell",
    "subprocess",
    "os",
    "sys",
    "open",
    "file",
    "files",
    "fs",
    "readFile",
    "writeFile",
    "Deno",
    "Bun",
    "__import__",
    "credentials",
    "token",
    "password",
];

/// The root names an expression may start from, besides bound variables.
pub const ROOTS: &[&str] = &["input", "steps"];

/// The default element count assumed for a list without `maxItems` when bounding cost.
pub const DEFAULT_LIST_BOUND: u64 = 1000;

/// The whitelisted function called `name`.
pub fn function(name: &str) -> Option<&'static Function> {
    FUNCTIONS.iter().find(|f| f.name == name)
}

/// Whether `name` reaches outside the sandbox.
pub fn is_sandbox_escape(name: &str) -> bool {
    SANDBOX_ESCAPES.contains(&name)
}

/// The whitelist as a Markdown table, for `lwirc explain functions` and the spec.
pub fn reference_markdown() -> String {
    let mut out = String::from("| function | call | signatures | cost |\n|---|---|---|---|\n");
    for f in FUNCTIONS {
        let call = match f.style {
            Style::Global => "`f(x)`",
            Style::Method => "`x.f()`",
            Style::Both => "`f(x)` or `x.f()`",
        };
        let sigs: Vec<String> = f
            .signatures
            .iter()
            .map(|s| {
                let params: Vec<&str> = std::iter::once(s.subject)
                    .chain(s.params.iter().copied())
                    .map(Param::as_str)
                    .collect();
                format!("({}) → {}", params.join(", "), s.result.as_str())
            })
            .collect();
        let cost = match f.cost {
            CostClass::Constant => "constant",
            CostClass::Linear => "linear",
            CostClass::PerElement => "per element × body",
        };
        out.push_str(&format!(
            "| `{}` | {call} | {} — {} | {cost} |\n",
            f.name,
            sigs.join("; "),
            f.doc
        ));
    }
    out
}
