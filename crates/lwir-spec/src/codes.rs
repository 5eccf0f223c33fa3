//! The one table of finding codes.
//!
//! Every code has exactly one row here: its code, the kebab-case name of the *problem*, the
//! validator that reports it, its default severity, and its documentation with the same
//! headings every time (*What it does · Why it matters · Example · Fix safety*). `lwirc
//! explain CODE` prints that documentation and `docs/codes.md` is generated from it, so the
//! tool and the docs cannot drift. Codes are stable and never reused: a retired code keeps
//! its row with status `Removed`.

use crate::finding::Severity;

/// The stage of lwirc that reports a code: one of the validators (document … graph), or
/// drift, the planner harness, the pipeline, goals, runners or the runtime. Its
/// [`Stage::as_str`] is what reports call the code's `validator`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    /// The spanned I-JSON reader.
    Document,
    /// Meta-schema and JSON Schema subset checks.
    Shape,
    /// Expressions: syntax, whitelist, scopes and types.
    Expression,
    /// Capability (tool) references and arguments.
    Capability,
    /// Model slot references and requirements.
    Model,
    /// Producer → consumer schema compatibility.
    Compat,
    /// Step graph and bounds.
    Graph,
    /// A registered version against today's definition (`lwirc drift`).
    Drift,
    /// The planner harness and the repair loop (`lwirc repair`, `lwirc compile`).
    Planner,
    /// The validation pipeline itself.
    Pipeline,
    /// Goal files and replan proposals (`lwirc goal`).
    Goal,
    /// Runners of a goal's work (`lwirc goal run`, protocol `lwir-runner/1`).
    Runner,
    /// The runtime: running a registered version and its run log (`lwirc run`, `lwirc
    /// runs`).
    Runtime,
}

impl Stage {
    /// Its name as shown in docs and SARIF rule properties.
    pub const fn as_str(self) -> &'static str {
        match self {
            Stage::Document => "document",
            Stage::Shape => "shape",
            Stage::Expression => "expression",
            Stage::Capability => "capability",
            Stage::Model => "model",
            Stage::Compat => "compat",
            Stage::Graph => "graph",
            Stage::Drift => "drift",
            Stage::Planner => "planner",
            Stage::Pipeline => "pipeline",
            Stage::Goal => "goal",
            Stage::Runner => "runner",
            Stage::Runtime => "runtime",
        }
    }
}

/// Whether a code is in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Reported by the current validators.
    Stable,
    /// Retired; kept so that the code is never reused.
    Removed,
}

macro_rules! code_table {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident = $code:literal, $name:literal, $stage:ident, $severity:ident, $status:ident;
    )*) => {
        /// A stable finding code. The doc of each variant is what `lwirc explain` prints.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl Code {
            /// Every code, in table order.
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            /// The code, such as `LW301`.
            pub const fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $code,)* }
            }

            /// The kebab-case name of the problem, such as `unknown-tool`.
            pub const fn name(self) -> &'static str {
                match self { $(Code::$variant => $name,)* }
            }

            /// The stage that reports it.
            pub const fn stage(self) -> Stage {
                match self { $(Code::$variant => Stage::$stage,)* }
            }

            /// Its default severity.
            pub const fn severity(self) -> Severity {
                match self { $(Code::$variant => Severity::$severity,)* }
            }

            /// Whether it is in use.
            pub const fn status(self) -> Status {
                match self { $(Code::$variant => Status::$status,)* }
            }

            fn raw_docs(self) -> &'static [&'static str] {
                match self { $(Code::$variant => &[$($doc),*],)* }
            }
        }
    };
}

impl Code {
    /// Looks a code up by its code (`LW301`, any case) or its name (`unknown-tool`).
    pub fn parse(text: &str) -> Option<Code> {
        Code::ALL
            .iter()
            .copied()
            .find(|c| c.as_str().eq_ignore_ascii_case(text) || c.name() == text)
    }

    /// Its documentation as Markdown, the same text `lwirc explain` prints.
    pub fn docs(self) -> String {
        let mut out = String::new();
        for line in self.raw_docs() {
            out.push_str(line.strip_prefix(' ').unwrap_or(line));
            out.push('\n');
        }
        out
    }

    /// The help a finding of this code carries when its reporter knows nothing more
    /// specific: what to do about a planner that failed, say. `None` for codes whose help
    /// depends on the place (a suggestion, a type).
    pub const fn help(self) -> Option<&'static str> {
        Some(match self {
            Code::PlannerNotStarted => {
                "nothing was asked of a planner, so the session stopped at once without \
                 retrying: with --planner, check the command (it is run without a shell); with \
                 --planner-url, check that the model server is running at that address"
            }
            Code::PlannerFailed => {
                "see the planner's standard error below; a planner that cannot help should \
                 answer attention instead of failing"
            }
            Code::PlannerTimedOut => "raise --planner-timeout, or make the planner answer sooner",
            Code::PlannerAnswerTooLarge => "print only the answer object on standard output",
            Code::PlannerAnswerNotJson | Code::PlannerAnswerInvalid => {
                "print exactly one answer object: {\"kind\":\"draft\",\"lwir\":{…}} or \
                 {\"kind\":\"attention\",\"rationale\":\"…\"}"
            }
            Code::PlannerNeedsAttention => {
                "the planner will not propose a draft; read its rationale, change the \
                 definition or the goal, and compile again"
            }
            Code::RepairCycle => {
                "look at the findings with these codes: the fixes or proposals for them undo \
                 each other"
            }
            _ => return None,
        })
    }

    /// The first sentence of its documentation.
    pub fn summary(self) -> &'static str {
        self.raw_docs()
            .first()
            .map(|l| l.trim())
            .unwrap_or_default()
    }

    /// What `lwirc explain CODE` prints: its name, validator, severity and documentation.
    pub fn explanation(self) -> String {
        format!(
            "# {self}: {}\n\nValidator: {} · default severity: {}\n\n{}",
            self.name(),
            self.stage().as_str(),
            self.severity().as_str(),
            self.docs()
        )
    }

    /// What `lwirc explain` prints: one line per stable code (code, name, validator,
    /// severity, summary).
    pub fn index() -> String {
        let mut out = String::new();
        for &code in Code::ALL.iter().filter(|c| c.status() == Status::Stable) {
            out.push_str(&format!(
                "{}  {:<30} {:<10} {:<7} {}\n",
                code,
                code.name(),
                code.stage().as_str(),
                code.severity().as_str(),
                code.summary()
            ));
        }
        out
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

code_table! {
    /// The file is not well-formed JSON.
    ///
    /// ## What it does
    /// Reports where the bytes stop being JSON (RFC 8259): a missing comma or bracket, a
    /// trailing comma, a comment, a single-quoted string, an unescaped control character in a
    /// string, a byte order mark, or text after the document. A buffer of 4 GiB or more is
    /// refused here too (byte offsets are 32-bit); the CLI refuses such a file before reading it.
    ///
    /// ## Why it matters
    /// Nothing can be checked or hashed in a document that does not parse, and lenient
    /// readers disagree about what malformed JSON means.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "lwir": "1", "steps": [], }
    /// ```
    /// Good:
    /// ```json
    /// { "lwir": "1", "steps": [] }
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: only the author knows what was meant.
    JsonSyntax = "LW001", "json-syntax-error", Document, Error, Stable;

    /// An object has the same key twice.
    ///
    /// ## What it does
    /// Reports every repeated key of an object, pointing at the repeat and at the first
    /// occurrence.
    ///
    /// ## Why it matters
    /// I-JSON (RFC 7493) forbids duplicate keys because parsers disagree on which value
    /// wins: many keep the last silently, so a reviewer and the runtime may read different
    /// workflows from the same bytes.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "id": "fetch", "kind": "tool.call", "id": "fetch2" }
    /// ```
    /// Good:
    /// ```json
    /// { "id": "fetch", "kind": "tool.call" }
    /// ```
    ///
    /// ## Fix safety
    /// When both values are equal, keeping one is machine-applicable: every reader reads
    /// the same document either way. When they differ there is no automatic fix: which of
    /// the two was meant is unknown.
    DuplicateKey = "LW002", "duplicate-key", Document, Error, Stable;

    /// A string contains a `\u` escape of half a surrogate pair.
    ///
    /// ## What it does
    /// Reports a `\uD800`–`\uDFFF` escape that is not part of a high/low surrogate pair.
    ///
    /// ## Why it matters
    /// A lone surrogate is not a Unicode character: it cannot be written as UTF-8, and
    /// I-JSON forbids it. Tools replace it differently, which changes hashes.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "description": "broken \ud83d emoji" }
    /// ```
    /// Good:
    /// ```json
    /// { "description": "whole \ud83d\ude00 emoji" }
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix.
    LoneSurrogate = "LW003", "lone-surrogate", Document, Error, Stable;

    /// The file contains bytes that are not valid UTF-8.
    ///
    /// ## What it does
    /// Reports each run of bytes inside a string that does not decode as UTF-8.
    ///
    /// ## Why it matters
    /// JSON exchanged between systems must be UTF-8 (RFC 8259 §8.1); invalid bytes are
    /// replaced differently by different tools, so the document has no single meaning.
    ///
    /// ## Example
    /// Bad: a string holding the Latin-1 byte `0xE9` instead of the UTF-8 `é` (`0xC3 0xA9`).
    ///
    /// Good: save the file as UTF-8.
    ///
    /// ## Fix safety
    /// No automatic fix.
    InvalidUtf8 = "LW004", "invalid-utf8", Document, Error, Stable;

    /// An integer is outside the range every JSON reader represents exactly.
    ///
    /// ## What it does
    /// Reports integers outside ±(2^53 − 1), the I-JSON interoperable range, unless the
    /// literal is exactly how RFC 8785 writes the double it denotes (`100000000000000000000`
    /// for 1e20, as `lwirc canon` writes it), which reads back as that double losing nothing.
    ///
    /// ## Why it matters
    /// Beyond 2^53 many readers (JavaScript, and any that go through a double) round the
    /// value silently, so a limit or an id would change between tools.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "init": 9007199254740993 }
    /// ```
    /// Good:
    /// ```json
    /// { "init": "9007199254740993" }
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix.
    IntegerOutOfRange = "LW005", "integer-out-of-range", Document, Error, Stable;

    /// A number is too large to be represented at all.
    ///
    /// ## What it does
    /// Reports numbers whose magnitude overflows an IEEE 754 double, such as `1e400`.
    ///
    /// ## Why it matters
    /// Such a number becomes infinity or an error depending on the reader; JSON has no
    /// infinity, so the value cannot be canonicalised or hashed.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "init": 1e400 }
    /// ```
    /// Good:
    /// ```json
    /// { "init": 1e300 }
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix.
    NumberOutOfRange = "LW006", "number-out-of-range", Document, Error, Stable;

    /// Arrays and objects are nested deeper than the reader allows.
    ///
    /// ## What it does
    /// Reports the first array or object opened beyond 128 levels of nesting, and stops
    /// reading there.
    ///
    /// ## Why it matters
    /// No workflow needs that depth, and unbounded nesting exhausts the stack of recursive
    /// readers; the limit keeps every tool on the path safe.
    ///
    /// ## Example
    /// Bad: `[[[[ … ]]]]` nested 129 deep.
    ///
    /// Good: flatten the structure.
    ///
    /// ## Fix safety
    /// No automatic fix.
    NestingTooDeep = "LW007", "nesting-too-deep", Document, Error, Stable;

    /// A required field is missing.
    ///
    /// ## What it does
    /// Reports an object of the draft (or the definition) that lacks a field its meta-schema
    /// requires, such as `tool` on a `tool.call` step or `max_iterations` on a `loop`.
    ///
    /// ## Why it matters
    /// Without the field the step has no defined behaviour.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "id": "fetch", "kind": "tool.call", "args": {} }
    /// ```
    /// Good:
    /// ```json
    /// { "id": "fetch", "kind": "tool.call", "tool": "github.list_issues", "args": {} }
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: the value is the author's choice.
    MissingField = "LW101", "missing-required-field", Shape, Error, Stable;

    /// An object has a field its meta-schema does not define.
    ///
    /// ## What it does
    /// Reports fields that LWIR does not know in the document, a step of that kind, a
    /// `requires` block, a case or the definition. Keys starting with `x-` are extensions
    /// and are allowed anywhere.
    ///
    /// ## Why it matters
    /// Documents are closed so that a typo (`agrs`) is not silently ignored: a field that
    /// nothing reads is a field whose intent is lost.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "id": "fetch", "kind": "tool.call", "tool": "github.list_issues", "agrs": {} }
    /// ```
    /// Good:
    /// ```json
    /// { "id": "fetch", "kind": "tool.call", "tool": "github.list_issues", "args": {} }
    /// ```
    ///
    /// ## Fix safety
    /// Renaming to a known field the object does not have yet that is
    /// a unique near match (the one candidate equal to it once case is folded and `_`, `-`, `.`
    /// are read alike, or one edit away on names of three characters or more, with no other
    /// candidate as close) is machine-applicable; a rename further away is maybe-incorrect.
    UnknownField = "LW102", "unknown-field", Shape, Error, Stable;

    /// A field has the wrong JSON type.
    ///
    /// ## What it does
    /// Reports a value whose JSON type differs from what the meta-schema requires, such as
    /// a number for `id` or an object for `after`.
    ///
    /// ## Why it matters
    /// The field cannot mean what it says; readers would have to guess a conversion.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "id": "wait", "kind": "loop", "max_iterations": "10", "until": "${ true }", "steps": [] }
    /// ```
    /// Good:
    /// ```json
    /// { "id": "wait", "kind": "loop", "max_iterations": 10, "until": "${ true }", "steps": [] }
    /// ```
    ///
    /// ## Fix safety
    /// Machine-applicable when one value is meant beyond doubt: a string that spells a number
    /// exactly as JSON writes an integer (`"10"`, not `"010"`, `"+10"`, `" 10"`, `"10.0"`,
    /// within ±(2^53 − 1)) where an integer is wanted; `"true"`/`"false"` where a boolean
    /// is; one name where a list of names is (`"after": "fetch"` → `["fetch"]`, likewise
    /// `capabilities` and `tools`); the LWIR version written as a number (`"lwir": 1`).
    /// Anything else has no automatic fix.
    WrongType = "LW103", "wrong-type", Shape, Error, Stable;

    /// A step has a `kind` LWIR does not define.
    ///
    /// ## What it does
    /// Reports a step `kind` other than `tool.call`, `model.call`, `code.run`, `map`,
    /// `reduce`, `branch` and `loop`.
    ///
    /// ## Why it matters
    /// The runtime has no semantics for it; nothing else about the step can be checked.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "id": "fetch", "kind": "tool.cal", "tool": "github.list_issues", "args": {} }
    /// ```
    /// Good:
    /// ```json
    /// { "id": "fetch", "kind": "tool.call", "tool": "github.list_issues", "args": {} }
    /// ```
    ///
    /// ## Fix safety
    /// Replacing with the kind that is a unique near match (the one candidate equal to it once case is folded and `_`, `-`, `.`
    /// are read alike, or one edit away on names of three characters or more, with no other
    /// candidate as close) is machine-applicable (`tool_call`,
    /// `Tool.Call`, `tool.cal`); a further one is maybe-incorrect.
    UnknownStepKind = "LW104", "unknown-step-kind", Shape, Error, Stable;

    /// An identifier does not have the form LWIR requires.
    ///
    /// ## What it does
    /// Reports step ids and bound variable names (`as`, `acc`) that do not match
    /// `[a-z_][a-z0-9_]*`.
    ///
    /// ## Why it matters
    /// Ids are used in expressions (`steps.<id>.output`); other characters would not parse
    /// or would read as operators.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "id": "List-Issues", "kind": "tool.call", "tool": "github.list_issues", "args": {} }
    /// ```
    /// Good:
    /// ```json
    /// { "id": "list_issues", "kind": "tool.call", "tool": "github.list_issues", "args": {} }
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: expressions may refer to the id.
    InvalidIdentifier = "LW105", "invalid-identifier", Shape, Error, Stable;

    /// A field has a value outside what the meta-schema allows.
    ///
    /// ## What it does
    /// Reports values of the right type that break another rule of the meta-schema: a
    /// `language` that is not `python`, `javascript` or `bash`, an unknown quality tier,
    /// a non-positive limit, an empty list where one item is required.
    ///
    /// ## Why it matters
    /// The value has no defined meaning for the runtime.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "id": "sum", "kind": "code.run", "language": "ruby", "body": "…", "output": {} }
    /// ```
    /// Good:
    /// ```json
    /// { "id": "sum", "kind": "code.run", "language": "python", "body": "…", "output": {} }
    /// ```
    ///
    /// ## Fix safety
    /// A string outside a closed list of values (a `language`, a quality tier, a
    /// capability) replaced with the listed value that is a unique near match (the one candidate equal to it once case is folded and `_`, `-`, `.`
    /// are read alike, or one edit away on names of three characters or more, with no other
    /// candidate as close) is machine-applicable
    /// (`Python` → `python`); a further one is maybe-incorrect. Other values have no
    /// automatic fix.
    InvalidValue = "LW106", "invalid-value", Shape, Error, Stable;

    /// A JSON Schema uses a keyword outside the supported subset.
    ///
    /// ## What it does
    /// Reports keywords such as `if`/`then`/`else`, `not`, `dependentSchemas`,
    /// `patternProperties`, `$dynamicRef` or `unevaluatedProperties` in any schema of the
    /// draft or the definition, at the keyword.
    ///
    /// ## Why it matters
    /// lwirc decides producer→consumer compatibility and types expressions from schemas;
    /// it does that exactly for the subset (type, properties, required,
    /// additionalProperties, items, prefixItems, enum, const, anyOf, oneOf, allOf, min/max*,
    /// *Length, *Items, pattern, `$defs` with local `$ref`, annotations) and not beyond it.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "type": "object", "not": { "required": ["x"] } }
    /// ```
    /// Good:
    /// ```json
    /// { "type": "object", "properties": { "x": false } }
    /// ```
    ///
    /// ## Fix safety
    /// Renaming a keyword to the supported keyword that is a unique near match (the one candidate equal to it once case is folded and `_`, `-`, `.`
    /// are read alike, or one edit away on names of three characters or more, with no other
    /// candidate as close) (`maxLenght` →
    /// `maxLength`), when the schema does not have it yet, is machine-applicable; a further
    /// one is maybe-incorrect. A keyword outside the subset has no automatic fix.
    UnsupportedSchemaKeyword = "LW107", "unsupported-schema-keyword", Shape, Error, Stable;

    /// A `$ref` is not a local reference into `$defs`.
    ///
    /// ## What it does
    /// Reports `$ref` values other than `#/$defs/<name>` (or `#` for the schema's root):
    /// remote URLs, file paths, anchors.
    ///
    /// ## Why it matters
    /// A remote reference makes the meaning of a pinned workflow depend on something
    /// outside it that can change after registration.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "$ref": "https://example.com/issue.json" }
    /// ```
    /// Good:
    /// ```json
    /// { "$ref": "#/$defs/issue", "$defs": { "issue": { "type": "object" } } }
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix.
    UnsupportedSchemaRef = "LW108", "unsupported-schema-ref", Shape, Error, Stable;

    /// A local `$ref` names a definition that does not exist.
    ///
    /// ## What it does
    /// Reports `#/$defs/<name>` references whose `<name>` is not in the schema's `$defs`.
    ///
    /// ## Why it matters
    /// The schema cannot be evaluated; validators would reject every value or accept any.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "$ref": "#/$defs/isue", "$defs": { "issue": { "type": "object" } } }
    /// ```
    /// Good:
    /// ```json
    /// { "$ref": "#/$defs/issue", "$defs": { "issue": { "type": "object" } } }
    /// ```
    ///
    /// ## Fix safety
    /// Replacing with the `$defs` name that is a unique near match (the one candidate equal to it once case is folded and `_`, `-`, `.`
    /// are read alike, or one edit away on names of three characters or more, with no other
    /// candidate as close) is machine-applicable; a further one
    /// is maybe-incorrect.
    DanglingSchemaRef = "LW109", "dangling-schema-ref", Shape, Error, Stable;

    /// The document declares an LWIR version this lwirc does not implement.
    ///
    /// ## What it does
    /// Reports a top-level `lwir` other than `"1"`.
    ///
    /// ## Why it matters
    /// Another version may give the same fields other meanings.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "lwir": "2", "workflow": "issue-triage", "steps": [] }
    /// ```
    /// Good:
    /// ```json
    /// { "lwir": "1", "workflow": "issue-triage", "steps": [] }
    /// ```
    ///
    /// ## Fix safety
    /// Replacing the version with `"1"` is machine-applicable: it is the only version a
    /// draft can be written in, so it is the only value the field can have.
    UnsupportedLwirVersion = "LW110", "unsupported-lwir-version", Shape, Error, Stable;

    /// A JSON Schema keyword has a malformed value.
    ///
    /// ## What it does
    /// Reports supported keywords whose value is not what JSON Schema allows: an unknown
    /// `type` name, a `required` that is not a list of strings, a negative `minLength`, a
    /// `pattern` that is not a valid regular expression, a `properties` that is not an
    /// object of schemas.
    ///
    /// ## Why it matters
    /// Schema validators disagree about malformed schemas; most ignore the keyword, so the
    /// intended constraint silently disappears.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "type": "strng" }
    /// ```
    /// Good:
    /// ```json
    /// { "type": "string" }
    /// ```
    ///
    /// ## Fix safety
    /// Replacing an unknown type name with the type name that is a unique near match (the one candidate equal to it once case is folded and `_`, `-`, `.`
    /// are read alike, or one edit away on names of three characters or more, with no other
    /// candidate as close) is
    /// machine-applicable (`strng`, `String` → `string`); a further one is maybe-incorrect.
    InvalidSchema = "LW111", "invalid-schema", Shape, Error, Stable;

    /// An expression or template does not parse.
    ///
    /// ## What it does
    /// Reports the first syntax error of each expression (`${ … }`) or template string, at the
    /// exact characters inside the JSON string: an unclosed `${`, a missing operand, an unknown
    /// string escape, an assignment where a comparison was meant. (An expression past the size
    /// limits is LW212.)
    ///
    /// ## Why it matters
    /// An expression that does not parse has no meaning; the runtime would fail at the step.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "when": "${ steps.tally.output = 0 }" }
    /// ```
    /// Good:
    /// ```json
    /// { "when": "${ steps.tally.output == 0 }" }
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix.
    ExpressionSyntax = "LW201", "expression-syntax-error", Expression, Error, Stable;

    /// An expression calls a function that is not whitelisted.
    ///
    /// ## What it does
    /// Reports calls of functions and methods outside the whitelist (`lwirc explain functions`
    /// lists it), and whitelisted functions called the wrong way (`lower(s)` instead of
    /// `s.lower()`).
    ///
    /// ## Why it matters
    /// Only whitelisted functions are known to terminate, to have no side effects and to have a
    /// bounded cost.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "prompt": "Title: ${ issue.title.toUpperCase() }" }
    /// ```
    /// Good:
    /// ```json
    /// { "prompt": "Title: ${ issue.title.upper() }" }
    /// ```
    ///
    /// ## Fix safety
    /// Replacing the name with the whitelisted function that is a unique near match (the one candidate equal to it once case is folded and `_`, `-`, `.`
    /// are read alike, or one edit away on names of three characters or more, with no other
    /// candidate as close) is
    /// machine-applicable when the call has that function's form (`x.f()` or `f(x)`), and
    /// maybe-incorrect otherwise; a further one is maybe-incorrect.
    UnknownFunction = "LW202", "unknown-function", Expression, Error, Stable;

    /// An expression names something that does not exist.
    ///
    /// ## What it does
    /// Reports identifiers that are neither a root (`input`, `steps`) nor a variable bound by an
    /// enclosing `map` (`as`), `reduce` (`acc`, `as`) or macro (`xs.map(x, …)`).
    ///
    /// ## Why it matters
    /// The runtime would have nothing to evaluate; usually a typo or a variable used outside the
    /// step that binds it.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "kind": "map", "as": "issue", "result": "${ isue.number }" }
    /// ```
    /// Good:
    /// ```json
    /// { "kind": "map", "as": "issue", "result": "${ issue.number }" }
    /// ```
    ///
    /// ## Fix safety
    /// Replacing the name with the root (`input`) or bound variable that is a unique near match (the one candidate equal to it once case is folded and `_`, `-`, `.`
    /// are read alike, or one edit away on names of three characters or more, with no other
    /// candidate as close) is
    /// machine-applicable; a further one is maybe-incorrect. A sandbox escape (LW204) is
    /// never fixed.
    UnknownIdentifier = "LW203", "unknown-identifier", Expression, Error, Stable;

    /// An expression reaches for something outside the sandbox.
    ///
    /// ## What it does
    /// Reports names such as `env`, `secrets`, `process`, `globalThis`, `import`, `require`,
    /// `eval`, `fetch`, `exec`, `system` and `open`, used as a root or as a function.
    ///
    /// ## Why it matters
    /// The planner cannot see secrets or the environment, and expressions have no I/O. A draft
    /// that tries is either mistaken or probing the boundary; either way it must not run.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "args": { "token": "${ env.GITHUB_TOKEN }" } }
    /// ```
    /// Good: declare the value in the definition's `input` schema and read `${ input.token }`;
    /// secrets belong to the tool implementation, never to the draft.
    ///
    /// ## Fix safety
    /// No automatic fix.
    SandboxEscape = "LW204", "sandbox-escape", Expression, Error, Stable;

    /// An expression references a step that does not exist.
    ///
    /// ## What it does
    /// Reports `steps.<id>` where no step of the document has that id.
    ///
    /// ## Why it matters
    /// The value the expression wants is never produced.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "prompt": "${ steps.classfy.output.label }" }
    /// ```
    /// Good:
    /// ```json
    /// { "prompt": "${ steps.classify.output.label }" }
    /// ```
    ///
    /// ## Fix safety
    /// Replacing the id with the step *in scope* that is a unique near match (the one candidate equal to it once case is folded and `_`, `-`, `.`
    /// are read alike, or one edit away on names of three characters or more, with no other
    /// candidate as close) is machine-applicable; a
    /// further one is maybe-incorrect. A close id of a step out of scope is only named in
    /// the help.
    UnknownStepReference = "LW205", "unknown-step-reference", Expression, Error, Stable;

    /// An expression references a step whose output is not available there.
    ///
    /// ## What it does
    /// Reports `steps.<id>` where the step exists but is not visible: it comes later (a forward
    /// reference), it is inside a `map` or `loop` body seen from outside, or it is the enclosing
    /// step itself. A step sees the steps before it in its own and enclosing lists.
    ///
    /// ## Why it matters
    /// The value does not exist yet (or exists once per item) when the expression runs.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// [ { "id": "write", "prompt": "${ steps.tally.output }" }, { "id": "tally", "kind": "reduce" } ]
    /// ```
    /// Good: put `tally` before `write`.
    ///
    /// ## Fix safety
    /// No automatic fix: reordering steps is a design decision.
    StepNotInScope = "LW206", "step-not-in-scope", Expression, Error, Stable;

    /// An expression reads a property that cannot exist.
    ///
    /// ## What it does
    /// Types member access against the schemas: reading a property that the producing schema
    /// does not define, on an object that allows no other properties, or reading a property of a
    /// value that is not an object. An object schema that lists `properties` and does not set
    /// `additionalProperties` (a `model.call`'s `output`, a tool's output) allows other names
    /// but says nothing of them, so an unguarded read of an unlisted one is reported too (with
    /// "did you mean"); where the schema sets `additionalProperties` to `true` or a schema,
    /// or the read is guarded by `has(…)`, it is LW210 at most.
    ///
    /// ## Why it matters
    /// The read always fails at run time; usually a typo or a misunderstanding of a tool's output.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "over": "${ steps.issues.output.item }" }
    /// ```
    /// Good:
    /// ```json
    /// { "over": "${ steps.issues.output.items }" }
    /// ```
    ///
    /// ## Fix safety
    /// Replacing the property with the defined property that is a unique near match (the one candidate equal to it once case is folded and `_`, `-`, `.`
    /// are read alike, or one edit away on names of three characters or more, with no other
    /// candidate as close) is
    /// machine-applicable on a closed object; on one that is open because it does not set
    /// `additionalProperties` the fix is maybe-incorrect (the name could exist at run time).
    UnknownProperty = "LW207", "unknown-property", Expression, Error, Stable;

    /// An expression has the wrong type for where it is used.
    ///
    /// ## What it does
    /// Checks operand types of operators, function arguments, and the places that need a type:
    /// `when`, `until` and branch conditions must be boolean, `over` must be a list, `reduce.with`
    /// must fit `init`'s type.
    ///
    /// ## Why it matters
    /// The expression would fail, or silently mean something else, at run time.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "kind": "map", "over": "${ steps.issues.output }" }
    /// ```
    /// Good:
    /// ```json
    /// { "kind": "map", "over": "${ steps.issues.output.items }" }
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix, by decision. A `when` or `until` comparing a string to a number
    /// literal (`x == 5` for a string `x`) could mean `x == '5'` or `int(x) == 5`, which
    /// differ on `"05"`; a template where an expression was meant (`"${ n } "`, a stray
    /// space, is a string) becomes another type when trimmed, which only its author can
    /// confirm. Both are shown with help, for the author or the planner.
    TypeMismatch = "LW208", "type-mismatch", Expression, Error, Stable;

    /// A template interpolates a list or an object.
    ///
    /// ## What it does
    /// Reports `${ … }` inside a template string (text around it) whose value is a list or an
    /// object. Templates produce strings and accept scalars.
    ///
    /// ## Why it matters
    /// How a structure turns into text is not defined; the prompt or argument would be garbage.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "prompt": "Summarise: ${ steps.issues.output.items }" }
    /// ```
    /// Good:
    /// ```json
    /// { "prompt": "Summarise: ${ steps.issues.output.items.map(i, i.title).join(', ') }" }
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix.
    NonScalarInTemplate = "LW209", "non-scalar-in-template", Expression, Error, Stable;

    /// An expression reads a value that may be absent without checking.
    ///
    /// ## What it does
    /// Warns when an expression reads a property that its schema does not list as `required`
    /// (or does not list at all, when `additionalProperties` is `true` or a schema), or the
    /// output of a step that may be skipped (`when`, a branch case), outside `has(…)` or a
    /// `has(…) ? … : …` / `has(…) && …` guard.
    ///
    /// ## Why it matters
    /// When the value is absent the read fails at run time, in the cases tests rarely cover.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "prompt": "${ issue.body }" }
    /// ```
    /// Good:
    /// ```json
    /// { "prompt": "${ has(issue.body) ? issue.body : '(no description)' }" }
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix.
    MaybeAbsentRead = "LW210", "maybe-absent-read", Expression, Warning, Stable;

    /// A `matches` pattern is not a valid regular expression.
    ///
    /// ## What it does
    /// Compiles the literal pattern of `s.matches('…')` with the linear-time RE2 syntax the
    /// runtime uses.
    ///
    /// ## Why it matters
    /// An invalid pattern fails every time the step runs; a pattern with backreferences or
    /// lookaround cannot run in linear time and is refused.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "when": "${ issue.title.matches('(?=bug)') }" }
    /// ```
    /// Good:
    /// ```json
    /// { "when": "${ issue.title.matches('^bug') }" }
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix.
    InvalidRegex = "LW211", "invalid-regex", Expression, Error, Stable;

    /// An expression is past the limits of the language.
    ///
    /// ## What it does
    /// Reports an expression whose brackets, braces, parentheses and `?:` nest deeper than 32
    /// levels, or whose syntax tree is deeper than 64 levels: each binary or prefix operator,
    /// call, member access and index of a chain is one level, so `a + a + … + a` with 65
    /// terms, `!!…!x` with 65 `!` or `x.a.a.…` with 64 members is too deep even without a
    /// bracket. The span covers the part of the expression where the limit is passed.
    ///
    /// ## Why it matters
    /// Checking, compiling and evaluating an expression walk its tree; the limits bound that
    /// work and keep it safe on any input. No expression a workflow needs comes near them.
    ///
    /// ## Example
    /// Bad (65 terms):
    /// ```json
    /// { "when": "${ x.ok && x.ok && x.ok && … && x.ok }" }
    /// ```
    /// Good: test a list with a macro, or compute parts in earlier steps:
    /// ```json
    /// { "when": "${ steps.checks.output.all(c, c.ok) }" }
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix.
    ExpressionTooComplex = "LW212", "expression-too-complex", Expression, Error, Stable;

    /// A step references a tool that is not in the definition's allowlist.
    ///
    /// ## What it does
    /// Reports a `tool.call` `tool`, or an entry of a `model.call`'s `tools`, that names no
    /// tool of the definition's `tools`.
    ///
    /// ## Why it matters
    /// The allowlist is the whole set of capabilities a workflow may use; anything else is
    /// either a typo or an attempt to reach beyond what was granted.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "id": "issues", "kind": "tool.call", "tool": "github.list_isues", "args": {} }
    /// ```
    /// Good:
    /// ```json
    /// { "id": "issues", "kind": "tool.call", "tool": "github.list_issues", "args": {} }
    /// ```
    ///
    /// ## Fix safety
    /// Replacing with the allowlisted tool that is a unique near match (the one candidate equal to it once case is folded and `_`, `-`, `.`
    /// are read alike, or one edit away on names of three characters or more, with no other
    /// candidate as close) is machine-applicable
    /// (`github.list-issues`, `GitHub.list_isues`); the closest tool further away is
    /// offered as maybe-incorrect.
    UnknownTool = "LW301", "unknown-tool", Capability, Error, Stable;

    /// A `tool.call` omits an argument the tool requires.
    ///
    /// ## What it does
    /// Reports each property in the tool's input schema `required` list that `args` lacks.
    ///
    /// ## Why it matters
    /// The call would fail at run time, after earlier steps have already spent money and
    /// made changes.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "id": "issues", "kind": "tool.call", "tool": "github.list_issues", "args": {} }
    /// ```
    /// Good:
    /// ```json
    /// { "id": "issues", "kind": "tool.call", "tool": "github.list_issues",
    ///   "args": { "repo": "${ input.repo }" } }
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: the value is the author's choice.
    MissingToolArgument = "LW302", "missing-tool-argument", Capability, Error, Stable;

    /// A `tool.call` passes an argument the tool does not accept.
    ///
    /// ## What it does
    /// Reports `args` properties that the tool's input schema forbids with
    /// `additionalProperties: false`.
    ///
    /// ## Why it matters
    /// The tool would reject the call, or ignore what the planner thought it configured.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "tool": "github.list_issues", "args": { "repo": "a/b", "stat": "open" } }
    /// ```
    /// Good:
    /// ```json
    /// { "tool": "github.list_issues", "args": { "repo": "a/b", "state": "open" } }
    /// ```
    ///
    /// ## Fix safety
    /// Renaming to the accepted argument, not given yet, that is a unique near match (the one candidate equal to it once case is folded and `_`, `-`, `.`
    /// are read alike, or one edit away on names of three characters or more, with no other
    /// candidate as close) is
    /// machine-applicable (the input schema is closed: no other name is accepted); a
    /// further one is maybe-incorrect.
    UnknownToolArgument = "LW303", "unknown-tool-argument", Capability, Error, Stable;

    /// A literal tool argument does not fit the tool's input schema.
    ///
    /// ## What it does
    /// Validates each literal (non-expression) argument against its property schema in the
    /// tool's input: wrong type, value outside `enum`, out of range, too long. Arguments
    /// given as expressions or templates are checked by the expression validator.
    ///
    /// ## Why it matters
    /// The call would be rejected at run time.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "tool": "github.list_issues", "args": { "repo": "a/b", "state": "opened" } }
    /// ```
    /// Good:
    /// ```json
    /// { "tool": "github.list_issues", "args": { "repo": "a/b", "state": "open" } }
    /// ```
    ///
    /// ## Fix safety
    /// Machine-applicable when one value is meant beyond doubt and fits the argument's
    /// schema: a string that spells an integer exactly as JSON writes it (`"5"` → `5`,
    /// within ±(2^53 − 1); not `"05"`, `"5.0"`, `" 5"`), `"true"`/`"false"` for a boolean,
    /// and a string that is a unique near match of one `enum` value (`"Open"` → `"open"`).
    /// A further enum value is maybe-incorrect; other mismatches have no automatic fix.
    ToolArgumentMismatch = "LW304", "tool-argument-mismatch", Capability, Error, Stable;

    /// A `model.call` names a model slot the definition does not have.
    ///
    /// ## What it does
    /// Reports a `model` that is not a key of the definition's `models`.
    ///
    /// ## Why it matters
    /// Slots are how a definition grants models; the draft cannot pick a model by itself.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "id": "write", "kind": "model.call", "model": "deeep", "prompt": "…", "output": {} }
    /// ```
    /// Good:
    /// ```json
    /// { "id": "write", "kind": "model.call", "model": "deep", "prompt": "…", "output": {} }
    /// ```
    ///
    /// ## Fix safety
    /// Replacing with the slot that is a unique near match (the one candidate equal to it once case is folded and `_`, `-`, `.`
    /// are read alike, or one edit away on names of three characters or more, with no other
    /// candidate as close) is machine-applicable (`Fast` → `fast`); a
    /// further one is maybe-incorrect. The planner's own slot (in the definition) is never
    /// fixed.
    UnknownModelSlot = "LW401", "unknown-model-slot", Model, Error, Stable;

    /// A model slot's quality tier is below what the step requires.
    ///
    /// ## What it does
    /// Compares `requires.quality` with the slot's `quality` in the order
    /// `basic < standard < high < frontier`.
    ///
    /// ## Why it matters
    /// The step was planned for a stronger model; a weaker one fails in ways validation
    /// cannot see.
    ///
    /// ## Example
    /// Bad: slot `fast` is `standard`, the step requires `high`.
    /// ```json
    /// { "model": "fast", "requires": { "quality": "high" } }
    /// ```
    /// Good:
    /// ```json
    /// { "model": "deep", "requires": { "quality": "high" } }
    /// ```
    ///
    /// ## Fix safety
    /// Switching to the one slot that meets every requirement is maybe-incorrect: it
    /// changes cost.
    ModelQualityTooLow = "LW402", "model-quality-too-low", Model, Error, Stable;

    /// A model slot lacks a capability the step requires.
    ///
    /// ## What it does
    /// Reports each entry of `requires.capabilities` that the slot's `capabilities` lacks.
    ///
    /// ## Why it matters
    /// A model without `json_output` cannot be trusted to produce the step's output schema.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "model": "fast", "requires": { "capabilities": ["tool_use"] } }
    /// ```
    /// Good:
    /// ```json
    /// { "model": "deep", "requires": { "capabilities": ["tool_use"] } }
    /// ```
    ///
    /// ## Fix safety
    /// Switching to the one slot that meets every requirement is maybe-incorrect.
    ModelCapabilityMissing = "LW403", "model-capability-missing", Model, Error, Stable;

    /// A model slot's context window is smaller than the step requires.
    ///
    /// ## What it does
    /// Compares `requires.context_tokens` with the slot's `context_tokens`.
    ///
    /// ## Why it matters
    /// The prompt would be truncated or rejected at run time.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "model": "fast", "requires": { "context_tokens": 100000 } }
    /// ```
    /// Good:
    /// ```json
    /// { "model": "deep", "requires": { "context_tokens": 100000 } }
    /// ```
    ///
    /// ## Fix safety
    /// Switching to the one slot that meets every requirement is maybe-incorrect.
    ModelContextTooSmall = "LW404", "model-context-too-small", Model, Error, Stable;

    /// A `model.call` passes `tools` to a slot without `tool_use`.
    ///
    /// ## What it does
    /// Reports a `model.call` with a non-empty `tools` list whose slot does not have the
    /// `tool_use` capability.
    ///
    /// ## Why it matters
    /// The model cannot call the tools; the step silently does less than planned.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "model": "fast", "tools": ["github.add_label"] }
    /// ```
    /// Good:
    /// ```json
    /// { "model": "deep", "tools": ["github.add_label"] }
    /// ```
    ///
    /// ## Fix safety
    /// Switching to the one slot that meets every requirement is maybe-incorrect.
    ModelToolsWithoutToolUse = "LW405", "model-tools-without-tool-use", Model, Error, Stable;

    /// A value flows into a place whose schema rejects some of its values.
    ///
    /// ## What it does
    /// For every edge where a value flows into something with a schema — a `tool.call` argument
    /// given as an expression or template against the tool's input property, the workflow
    /// `output` against the definition's `output` schema — decides whether every value the
    /// producer can emit is accepted (producer ⊆ consumer). When not, the help gives a concrete
    /// counterexample: a value the producer may emit and the consumer rejects.
    ///
    /// ## Why it matters
    /// The step fails at run time for exactly those values, often far from where the plan was
    /// made.
    ///
    /// ## Example
    /// Bad (`number` expects an integer, `issue.title` is a string):
    /// ```json
    /// { "tool": "github.add_label", "args": { "number": "${ issue.title }" } }
    /// ```
    /// Good:
    /// ```json
    /// { "tool": "github.add_label", "args": { "number": "${ issue.number }" } }
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix.
    IncompatibleValueFlow = "LW501", "incompatible-value-flow", Compat, Error, Stable;

    /// lwirc cannot decide whether a value fits where it flows.
    ///
    /// ## What it does
    /// Warns when producer ⊆ consumer can be neither proven nor refuted, naming the keyword that
    /// stopped the decision (two different `pattern`s, an `allOf` it cannot intersect, a union
    /// that only covers the producer jointly).
    ///
    /// ## Why it matters
    /// The flow may fail at run time; a person should look, or the schemas be made comparable.
    ///
    /// ## Example
    /// Bad: a producer `{ "type": "string", "pattern": "^[a-z]+$" }` into a consumer
    /// `{ "type": "string", "pattern": "^[a-c]+$" }`.
    ///
    /// Good: the same `pattern` on both sides, or an `enum`.
    ///
    /// ## Fix safety
    /// Nothing to fix automatically.
    UndecidableValueFlow = "LW502", "undecidable-value-flow", Compat, Warning, Stable;

    /// Two steps have the same id.
    ///
    /// ## What it does
    /// Reports every step whose `id` was already used by another step anywhere in the
    /// document, nested steps included, with the first use as related place.
    ///
    /// ## Why it matters
    /// `steps.<id>` references and `after` lists would be ambiguous.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// [ { "id": "fetch", "kind": "tool.call" }, { "id": "fetch", "kind": "model.call" } ]
    /// ```
    /// Good:
    /// ```json
    /// [ { "id": "fetch", "kind": "tool.call" }, { "id": "summarise", "kind": "model.call" } ]
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: references may mean either step.
    DuplicateStepId = "LW601", "duplicate-step-id", Graph, Error, Stable;

    /// An `after` entry names no step.
    ///
    /// ## What it does
    /// Reports ids in `after` that no step of the document has.
    ///
    /// ## Why it matters
    /// The ordering the planner intended does not exist; the step could run too early.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "id": "write", "kind": "model.call", "after": ["tally2"] }
    /// ```
    /// Good:
    /// ```json
    /// { "id": "write", "kind": "model.call", "after": ["tally"] }
    /// ```
    ///
    /// ## Fix safety
    /// Replacing with the step id that is a unique near match (the one candidate equal to it once case is folded and `_`, `-`, `.`
    /// are read alike, or one edit away on names of three characters or more, with no other
    /// candidate as close) is machine-applicable; a further one is
    /// maybe-incorrect.
    DanglingAfter = "LW602", "dangling-after", Graph, Error, Stable;

    /// Steps depend on each other in a cycle.
    ///
    /// ## What it does
    /// Finds cycles in the dependency graph and reports each once, with the full path
    /// (`a → b → a`) and every edge as a related place.
    ///
    /// ## Why it matters
    /// No step of a cycle can ever start: the workflow would deadlock.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// [ { "id": "a", "after": ["b"] }, { "id": "b", "after": ["a"] } ]
    /// ```
    /// Good:
    /// ```json
    /// [ { "id": "a" }, { "id": "b", "after": ["a"] } ]
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: which edge is wrong is a design decision.
    DependencyCycle = "LW603", "dependency-cycle", Graph, Error, Stable;

    /// The draft names a different workflow than the definition.
    ///
    /// ## What it does
    /// Compares the draft's `workflow` with the definition's `name`.
    ///
    /// ## Why it matters
    /// A draft compiled for one workflow must not be registered under another's tools,
    /// models and limits.
    ///
    /// ## Example
    /// Bad: `"workflow": "issue-triag"` against a definition named `issue-triage`.
    ///
    /// Good: `"workflow": "issue-triage"`.
    ///
    /// ## Fix safety
    /// Replacing with the definition's name is machine-applicable: against this definition
    /// it is the only value the field can have. (Passing the wrong definition shows in
    /// everything else the draft reports.)
    WorkflowNameMismatch = "LW604", "workflow-name-mismatch", Graph, Error, Stable;

    /// The draft has more steps than the definition allows.
    ///
    /// ## What it does
    /// Counts every step, nested ones included, against `limits.max_steps`.
    ///
    /// ## Why it matters
    /// Limits bound the cost and blast radius of a run; a planner must stay inside them.
    ///
    /// ## Example
    /// Bad: 201 steps with `"max_steps": 200`.
    ///
    /// Good: 200 steps or fewer, using `map` for repeated work.
    ///
    /// ## Fix safety
    /// No automatic fix.
    TooManySteps = "LW605", "too-many-steps", Graph, Error, Stable;

    /// A `map` runs more items at once than the definition allows.
    ///
    /// ## What it does
    /// Compares a `map` step's `max_parallel` with `limits.max_parallel`.
    ///
    /// ## Why it matters
    /// Parallelism is bounded to protect the tools and rate limits the workflow uses.
    ///
    /// ## Example
    /// Bad: `"max_parallel": 64` with `"max_parallel": 16` in the limits.
    ///
    /// Good: `"max_parallel": 16`.
    ///
    /// ## Fix safety
    /// Lowering `max_parallel` to the limit is machine-applicable: it changes how fast the
    /// map runs, not what it computes.
    ParallelismOverLimit = "LW606", "parallelism-over-limit", Graph, Error, Stable;

    /// A `loop` may iterate more often than the definition allows.
    ///
    /// ## What it does
    /// Compares a `loop` step's `max_iterations` with `limits.max_loop_iterations`.
    ///
    /// ## Why it matters
    /// Every loop must be bounded so that a run terminates and its cost can be bounded
    /// before it starts.
    ///
    /// ## Example
    /// Bad: `"max_iterations": 1000` with `"max_loop_iterations": 100`.
    ///
    /// Good: `"max_iterations": 100`.
    ///
    /// ## Fix safety
    /// Lowering it to the limit is machine-applicable: a bound above the limit cannot run
    /// at all, and the limit is the valid bound nearest the author's. The loop may then
    /// stop before `until` holds (LW1107 at run time), which the help says.
    LoopIterationsOverLimit = "LW607", "loop-iterations-over-limit", Graph, Error, Stable;

    /// A `code.run` body is larger than allowed.
    ///
    /// ## What it does
    /// Reports a `body` longer than 65 536 bytes of UTF-8.
    ///
    /// ## Why it matters
    /// Steps are meant to be small and reviewable; a large body hides behaviour from the
    /// people who approve a workflow and bloats every registered version.
    ///
    /// ## Example
    /// Bad: a 200 KB inlined library in `body`.
    ///
    /// Good: a short function; larger logic belongs in a tool.
    ///
    /// ## Fix safety
    /// No automatic fix.
    CodeBodyTooLarge = "LW608", "code-body-too-large", Graph, Error, Stable;

    /// A tool a registered version uses has a different description now.
    ///
    /// ## What it does
    /// `lwirc drift` compares the SHA-256 of the tool's `description` (over its RFC 8785
    /// form) pinned when the version was registered with the one in today's definition.
    ///
    /// ## Why it matters
    /// The description is what a model reads when a `model.call` may call the tool, and it
    /// usually changes because the tool's behaviour did: the version was compiled against
    /// the old meaning.
    ///
    /// ## Example
    /// Bad: registered with `"description": "Add a label to an issue."`, today
    /// `"description": "Add a label; creates the label if missing."`.
    ///
    /// Good: the definition still says `"description": "Add a label to an issue."`, or the
    /// draft is registered again (a new version) against today's definition.
    ///
    /// ## Fix safety
    /// No automatic fix: a registered version is immutable; compile and register the draft
    /// again against today's definition.
    ToolDescriptionChanged = "LW701", "tool-description-changed", Drift, Error, Stable;

    /// A tool a registered version uses has a different input schema now.
    ///
    /// ## What it does
    /// `lwirc drift` compares the SHA-256 of the tool's `input` schema (over its RFC 8785
    /// form) pinned at registration with the one in today's definition.
    ///
    /// ## Why it matters
    /// The version's `args` were checked against the old schema; a new required property or
    /// a narrower type makes its calls fail, or mean something else, at run time.
    ///
    /// ## Example
    /// Bad: registered with `"required": ["repo", "number", "label"]`, today
    /// `"required": ["repo", "number", "label", "color"]`.
    ///
    /// Good: the pinned input schema, unchanged.
    ///
    /// ## Fix safety
    /// No automatic fix: register the draft again after `lwirc validate` passes against
    /// today's definition.
    ToolInputChanged = "LW702", "tool-input-changed", Drift, Error, Stable;

    /// A tool a registered version uses has a different output schema now.
    ///
    /// ## What it does
    /// `lwirc drift` compares the SHA-256 of the tool's `output` schema (over its RFC 8785
    /// form) pinned at registration with the one in today's definition.
    ///
    /// ## Why it matters
    /// Later steps read the tool's output through expressions typed against the old schema;
    /// a renamed or retyped property breaks them.
    ///
    /// ## Example
    /// Bad: registered with output property `items`, today it is called `issues`.
    ///
    /// Good: the pinned output schema, unchanged.
    ///
    /// ## Fix safety
    /// No automatic fix: register the draft again against today's definition (`lwirc register
    /// --rebase` when it still validates clean).
    ToolOutputChanged = "LW703", "tool-output-changed", Drift, Error, Stable;

    /// A tool a registered version uses is no longer in the definition.
    ///
    /// ## What it does
    /// `lwirc drift` reports each tool of the version's capability snapshot that today's
    /// `tools` allowlist no longer has.
    ///
    /// ## Why it matters
    /// The allowlist is what the workflow may call; a removed tool must not be called by a
    /// version compiled while it was allowed.
    ///
    /// ## Example
    /// Bad: the version calls `github.add_label`, and today's `tools` lacks it.
    ///
    /// Good: `tools` still has `github.add_label`.
    ///
    /// ## Fix safety
    /// No automatic fix: restore the tool or compile a draft that does without it.
    ToolRemoved = "LW704", "tool-removed", Drift, Error, Stable;

    /// A model slot a registered version uses is no longer in the definition.
    ///
    /// ## What it does
    /// `lwirc drift` reports each slot of the version's model snapshot that today's
    /// `models` no longer has.
    ///
    /// ## Why it matters
    /// Its `model.call` steps have no model to run on.
    ///
    /// ## Example
    /// Bad: the version prompts slot `fast`, and today's `models` lacks it.
    ///
    /// Good: `models` still has `fast`.
    ///
    /// ## Fix safety
    /// No automatic fix: restore the slot or compile a draft that uses another.
    ModelSlotRemoved = "LW705", "model-slot-removed", Drift, Error, Stable;

    /// A model slot a registered version uses names another model now.
    ///
    /// ## What it does
    /// `lwirc drift` compares the slot's `model` pinned at registration with today's.
    ///
    /// ## Why it matters
    /// Prompts and output schemas were planned for one model; another may answer
    /// differently, cost differently or not follow the schema.
    ///
    /// ## Example
    /// Bad: registered with `"model": "acme/small-2"`, today `"model": "acme/small-3"`.
    ///
    /// Good: `"model": "acme/small-2"`.
    ///
    /// ## Fix safety
    /// No automatic fix: register the draft again once it validates against the new model.
    ModelChanged = "LW706", "model-changed", Drift, Error, Stable;

    /// A model slot a registered version uses has another quality tier now.
    ///
    /// ## What it does
    /// `lwirc drift` compares the slot's `quality` pinned at registration with today's and
    /// says whether it was lowered or raised (an unknown or missing tier counts as lowered).
    ///
    /// ## Why it matters
    /// A lower tier may no longer meet the `requires.quality` the steps were validated
    /// with; a higher one changes cost and behaviour. Either way the version no longer runs
    /// on what it was compiled against.
    ///
    /// ## Example
    /// Bad: registered with `"quality": "high"`, today `"quality": "standard"`.
    ///
    /// Good: `"quality": "high"`.
    ///
    /// ## Fix safety
    /// No automatic fix: register the draft again against today's definition (`lwirc register
    /// --rebase` when it still validates clean).
    ModelQualityChanged = "LW707", "model-quality-changed", Drift, Error, Stable;

    /// A model slot a registered version uses lost a capability.
    ///
    /// ## What it does
    /// `lwirc drift` reports each capability of the pinned slot that today's slot lacks.
    ///
    /// ## Why it matters
    /// Steps were validated on it: without `json_output` the output schema is not
    /// enforced, without `tool_use` the step's `tools` cannot be called.
    ///
    /// ## Example
    /// Bad: registered with `"capabilities": ["json_output", "tool_use"]`, today
    /// `"capabilities": ["json_output"]`.
    ///
    /// Good: `"capabilities": ["json_output", "tool_use"]`.
    ///
    /// ## Fix safety
    /// No automatic fix: restore the capability or register a draft that does without it.
    ModelCapabilityLost = "LW708", "model-capability-lost", Drift, Error, Stable;

    /// A model slot a registered version uses has a smaller context window now.
    ///
    /// ## What it does
    /// `lwirc drift` compares the slot's `context_tokens` pinned at registration with
    /// today's; a window no longer declared counts as reduced.
    ///
    /// ## Why it matters
    /// Prompts sized for the old window are truncated or rejected.
    ///
    /// ## Example
    /// Bad: registered with `"context_tokens": 200000`, today `"context_tokens": 32000`.
    ///
    /// Good: `"context_tokens": 200000` (or more).
    ///
    /// ## Fix safety
    /// No automatic fix: register the draft again against today's definition (`lwirc register
    /// --rebase` when it still validates clean).
    ModelContextReduced = "LW709", "model-context-reduced", Drift, Error, Stable;

    /// A model slot a registered version uses changed in a way that weakens nothing.
    ///
    /// ## What it does
    /// `lwirc drift` reports a slot whose object hash differs from the pinned one although
    /// its model, quality, capabilities and context window give the version everything it
    /// had: a new description, an added capability, a larger window, an extension field.
    ///
    /// ## Why it matters
    /// Nothing the version relies on is weaker, so it is a warning; it still says that the
    /// slot is not byte-for-byte what the version was registered against.
    ///
    /// ## Example
    /// Bad (a warning): registered with `"description": "cheap classifier"`, today
    /// `"description": "cheap classifier, EU region"`.
    ///
    /// Good: the slot as pinned.
    ///
    /// ## Fix safety
    /// Nothing to fix; `lwirc register --rebase` pins today's slot.
    ModelSlotChanged = "LW710", "model-slot-changed", Drift, Warning, Stable;

    /// The definition's input schema is not the one a registered version was compiled
    /// against.
    ///
    /// ## What it does
    /// `lwirc drift` compares the definition's `input` schema kept in the registration
    /// record with the one in today's definition (records written before lwirc kept it are
    /// not compared).
    ///
    /// ## Why it matters
    /// What runs the version — a goal's work item, a caller — builds its input against the
    /// recorded schema; the draft's expressions read `input` as it was typed then. A renamed
    /// or newly required field makes runs fail or read the wrong thing.
    ///
    /// ## Example
    /// Bad: registered with `"required": ["repo"]`, today `"required": ["repo", "since"]`.
    ///
    /// Good: the recorded input schema, unchanged.
    ///
    /// ## Fix safety
    /// No automatic fix: validate the draft against today's definition, and `lwirc register
    /// --rebase` it when it is clean.
    WorkflowInputChanged = "LW711", "workflow-input-changed", Drift, Error, Stable;

    /// The definition's output schema is not the one a registered version was compiled
    /// against.
    ///
    /// ## What it does
    /// `lwirc drift` compares the definition's `output` schema kept in the registration
    /// record with the one in today's definition.
    ///
    /// ## Why it matters
    /// Whatever reads the version's output (a goal's dependent work, `work.<key>.output`)
    /// was typed against the recorded schema; a changed output breaks them.
    ///
    /// ## Example
    /// Bad: registered with output property `summary`, today it is called `notes`.
    ///
    /// Good: the recorded output schema, unchanged.
    ///
    /// ## Fix safety
    /// No automatic fix: validate the draft against today's definition, and `lwirc register
    /// --rebase` it when it is clean.
    WorkflowOutputChanged = "LW712", "workflow-output-changed", Drift, Error, Stable;

    /// The planner command could not be started, or the model server could not be reached.
    ///
    /// ## What it does
    /// `lwirc repair` and `lwirc compile` start the `--planner` command for every planner
    /// call. It is run directly, without a shell: the first word is the program, found on
    /// `PATH` or by its path. Reported when the program does not exist or is not executable.
    /// With `--planner-url`, reported when nothing answers at that address (connection
    /// refused, no such host), when the server has no chat endpoint there (404: the URL
    /// usually needs the API root, `/v1`), when it refuses the key (401, 403), or when it
    /// redirects.
    ///
    /// ## Why it matters
    /// Without a planner there is no draft and no repair. Nothing was asked of a model, and
    /// asking again would fail the same way, so the session stops at this call
    /// (`stopped_by: planner-unavailable`) instead of spending its planner calls; the stop
    /// is attributed to the planner giving no proposal.
    ///
    /// ## Example
    /// Bad: `--planner 'planners/replay.sh answers'` where the script is not executable, or
    /// `--planner 'python3 plan.py | tee log'` (a pipe needs a shell).
    ///
    /// Good: `chmod +x planners/replay.sh`, or `--planner-shell --planner 'python3 plan.py | tee log'`.
    ///
    /// ## Fix safety
    /// Nothing to fix in the draft; fix the command.
    PlannerNotStarted = "LW801", "planner-not-started", Planner, Error, Stable;

    /// The planner exited with a non-zero status or was killed by a signal.
    ///
    /// ## What it does
    /// A planner call succeeds only when the process exits with status 0; its answer is then
    /// read from standard output. Any other exit is this finding, with the last lines the
    /// planner wrote to standard error.
    ///
    /// ## Why it matters
    /// A crashed planner gave no proposal. The loop may call it again while
    /// `max_planner_calls` and `max_repair_attempts` allow; the report counts crashes apart
    /// from proposals that failed validation.
    ///
    /// ## Example
    /// Bad: the planner raises an exception (exit 1) or runs out of memory (signal 9).
    ///
    /// Good: the planner prints one JSON answer and exits 0; when it cannot help it answers
    /// `{"kind": "attention", "rationale": "…"}` instead of failing.
    ///
    /// ## Fix safety
    /// Nothing to fix in the draft.
    PlannerFailed = "LW802", "planner-failed", Planner, Error, Stable;

    /// The planner did not answer within the timeout.
    ///
    /// ## What it does
    /// Every planner call has a deadline (`--planner-timeout`, 300 seconds by default). When
    /// it passes, the planner and every process it started (its process group) are killed.
    ///
    /// ## Why it matters
    /// A hung planner must not hang the compiler, a CI job or an editor. The call counts as
    /// one planner call that gave no proposal.
    ///
    /// ## Example
    /// Bad: a planner waiting on a model server that never responds.
    ///
    /// Good: a planner with its own request timeout shorter than `--planner-timeout`, which
    /// answers `attention` when the model is unavailable.
    ///
    /// ## Fix safety
    /// Nothing to fix in the draft.
    PlannerTimedOut = "LW803", "planner-timed-out", Planner, Error, Stable;

    /// The planner wrote more to standard output than the answer size limit.
    ///
    /// ## What it does
    /// At most `--planner-max-output` bytes (16 MiB by default) of an answer are read; a
    /// planner that writes more is killed.
    ///
    /// ## Why it matters
    /// Bounds hold for every input lwirc reads: a runaway planner must not exhaust memory.
    ///
    /// ## Example
    /// Bad: a planner that prints its model's whole transcript before the answer.
    ///
    /// Good: only the answer object on standard output; logs go to standard error.
    ///
    /// ## Fix safety
    /// Nothing to fix in the draft.
    PlannerAnswerTooLarge = "LW804", "planner-answer-too-large", Planner, Error, Stable;

    /// The planner's standard output is not one JSON value.
    ///
    /// ## What it does
    /// The answer is read with the same strict I-JSON reader as drafts. Anything else on
    /// standard output — log lines, Markdown fences around the JSON, an empty output — is
    /// this finding, pointing at the first offending byte.
    ///
    /// ## Why it matters
    /// Guessing at a garbled answer would let text nobody can trust into the draft.
    ///
    /// ## Example
    /// Bad: `Here is the plan: {"kind": "draft", …}`
    ///
    /// Good: `{"kind": "draft", "lwir": {…}}` and nothing else.
    ///
    /// ## Fix safety
    /// Nothing to fix in the draft; fix the planner.
    PlannerAnswerNotJson = "LW805", "planner-answer-not-json", Planner, Error, Stable;

    /// The planner's answer is JSON but not an answer of the planner protocol.
    ///
    /// ## What it does
    /// An answer is an object with `"kind": "draft"` and an object `lwir`, or
    /// `"kind": "attention"` and a string `rationale` (schema:
    /// `crates/lwir-spec/schema/planner-protocol-1.schema.json`). Anything else is this finding,
    /// naming what is missing or wrong.
    ///
    /// ## Why it matters
    /// A draft that is an array, a string holding JSON, or an answer without a `kind` cannot
    /// be taken as a proposal.
    ///
    /// ## Example
    /// Bad: `{"kind": "draft", "lwir": "{\"lwir\": \"1\", …}"}` (a string, not an object)
    ///
    /// Good: `{"kind": "draft", "lwir": {"lwir": "1", …}}`
    ///
    /// ## Fix safety
    /// Nothing to fix in the draft; fix the planner.
    PlannerAnswerInvalid = "LW806", "planner-answer-invalid", Planner, Error, Stable;

    /// The planner gave up and asked for a person.
    ///
    /// ## What it does
    /// The planner answered `{"kind": "attention", "rationale": "…"}`: it will not propose a
    /// (further) draft. The loop stops at once; the rationale is shown (at most 4096
    /// characters).
    ///
    /// ## Why it matters
    /// Giving up is an honest answer; asking again would only spend the budget. Nothing is
    /// registered.
    ///
    /// ## Example
    /// Bad (for the run): `{"kind": "attention", "rationale": "the goal needs a tool to send
    /// e-mail and the definition has none"}`
    ///
    /// Good: add the missing capability to the definition, or change the goal, then compile
    /// again.
    ///
    /// ## Fix safety
    /// Nothing to fix in the draft.
    PlannerNeedsAttention = "LW807", "planner-needs-attention", Planner, Error, Stable;

    /// The repair loop came back to a draft it had already seen.
    ///
    /// ## What it does
    /// Every state of the draft (after each fix pass and each planner proposal) is
    /// identified by its RFC 8785 canonical hash, and every fix pass's result by its set of
    /// findings. When a state repeats (A → B → A), the loop stops and names the codes of the
    /// findings that kept it going round.
    ///
    /// ## Why it matters
    /// A loop that revisits a state will not converge; spending the rest of the budget on it
    /// only hides the cause.
    ///
    /// ## Example
    /// Bad: a planner that answers finding X by reintroducing finding Y, and Y by
    /// reintroducing X.
    ///
    /// Good: a proposal that resolves every finding it is given without undoing an earlier
    /// repair.
    ///
    /// ## Fix safety
    /// Nothing to fix automatically: the codes named are where a person should look.
    RepairCycle = "LW808", "repair-cycle", Planner, Error, Stable;

    /// The draft was validated without a definition.
    ///
    /// ## What it does
    /// Reported once when `lwirc validate` runs without `-d/--definition`: the checks that
    /// need the definition (tools, model slots, workflow name, limits) were skipped.
    ///
    /// ## Why it matters
    /// A draft that passes without its definition may still reference tools it is not
    /// allowed to use; only a validation against the definition can be registered.
    ///
    /// ## Example
    /// Bad: `lwirc validate draft.json`
    ///
    /// Good: `lwirc validate draft.json -d workflow.json`
    ///
    /// ## Fix safety
    /// Nothing to fix in the draft.
    DefinitionNotProvided = "LW901", "definition-not-provided", Pipeline, Warning, Stable;

    /// A work item names a template that is not in the goal's catalog.
    ///
    /// ## What it does
    /// Every work item of a goal file, and every item a replan proposes, runs one template of
    /// the goal's frozen `templates` catalog, by its name there. Reported for a `template`
    /// that names none of them, with the nearest name when one is close.
    ///
    /// ## Why it matters
    /// The catalog is the goal's code-selection authority: the planner chooses among
    /// registered, reviewed versions and never picks or writes code that runs. A name outside
    /// it is refused, never looked up elsewhere.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "key": "notes", "template": "note", "input": {} }
    /// ```
    /// Good:
    /// ```json
    /// { "key": "notes", "template": "notes", "input": {} }
    /// ```
    ///
    /// ## Fix safety
    /// Replacing with the catalog template that is a unique near match (the one candidate equal to it once case is folded and `_`, `-`, `.`
    /// are read alike, or one edit away on names of three characters or more, with no other
    /// candidate as close) is machine-applicable; a further
    /// one is maybe-incorrect. A proposal is never changed by lwirc, only refused: the fix
    /// is for the goal file's author, an editor or the runner.
    UnknownTemplate = "LW1001", "unknown-template", Goal, Error, Stable;

    /// Two work items have the same key, or a proposed item reuses an active key.
    ///
    /// ## What it does
    /// Keys name work in `after` and in `work.<key>` expressions, so they must be unique in
    /// the goal file and in a proposal, and a proposed item must not take the key of an item
    /// of the active generation.
    ///
    /// ## Why it matters
    /// With two items of one key, `work.notes.output` would have two meanings, and a report
    /// could land on the wrong item.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// [ { "key": "notes", "template": "notes", "input": {} },
    ///   { "key": "notes", "template": "notes-cached", "input": {} } ]
    /// ```
    /// Good: `notes` and `notes_cached`.
    ///
    /// ## Fix safety
    /// No automatic fix: which item should be renamed is unknown.
    DuplicateWorkKey = "LW1002", "duplicate-work-key", Goal, Error, Stable;

    /// A dependency names no earlier item and no active work.
    ///
    /// ## What it does
    /// An `after` entry or a `work.<key>` read must name an item before this one in the same
    /// file or proposal, or (in a proposal) an item of the active generation. Reported for a
    /// key that names neither, for an item that depends on itself, and for a key of a later
    /// item.
    ///
    /// ## Why it matters
    /// Dependencies on earlier items only make every plan acyclic by construction, and a
    /// dependency on superseded or unknown work could never be satisfied.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "key": "publish", "template": "publish", "after": ["notse"], "input": {} }
    /// ```
    /// Good:
    /// ```json
    /// { "key": "publish", "template": "publish", "after": ["notes"], "input": {} }
    /// ```
    ///
    /// ## Fix safety
    /// Replacing with the item key that is a unique near match (the one candidate equal to it once case is folded and `_`, `-`, `.`
    /// are read alike, or one edit away on names of three characters or more, with no other
    /// candidate as close) is machine-applicable; a further one is
    /// maybe-incorrect.
    UnknownDependency = "LW1003", "unknown-dependency", Goal, Error, Stable;

    /// The plan's root is not one of its own new items.
    ///
    /// ## What it does
    /// The `root` of a goal file names one of its work items; the `root` of a replan
    /// proposal names one of the items it proposes (a new root: an item already in the goal
    /// cannot be the root of a new generation).
    ///
    /// ## Why it matters
    /// A generation is the closure of its root. Re-rooting on existing work would make a
    /// generation out of nothing new, or resurrect work that already failed.
    ///
    /// ## Example
    /// Bad: `"root": "notes"` where `notes` is the failed root of generation 0.
    ///
    /// Good: `"root": "notes_cached"`, an item of the proposal.
    ///
    /// ## Fix safety
    /// Replacing with the proposed item key that is a unique near match (the one candidate equal to it once case is folded and `_`, `-`, `.`
    /// are read alike, or one edit away on names of three characters or more, with no other
    /// candidate as close) is machine-applicable; a further
    /// one is maybe-incorrect.
    RootNotNew = "LW1004", "root-not-new", Goal, Error, Stable;

    /// The root item's template may not be a plan root.
    ///
    /// ## What it does
    /// Each catalog entry says whether its template may be a plan root (`"root": true`).
    /// Reported when the root item of a goal file or proposal runs a template that may not.
    ///
    /// ## Why it matters
    /// Which templates can stand for the whole goal is decided when the goal is created, not
    /// by the planner: a helper step (mirroring a log, say) must not become "the goal
    /// succeeded".
    ///
    /// ## Example
    /// Bad: `"root": "mirror"` where `mirror` runs `mirror-log`, with `"root": false`.
    ///
    /// Good: the root runs `notes` or `notes-cached`, both root-capable.
    ///
    /// ## Fix safety
    /// No automatic fix.
    RootNotRootCapable = "LW1005", "root-not-root-capable", Goal, Error, Stable;

    /// A work item is not reachable from the root.
    ///
    /// ## What it does
    /// Every item of a goal file or proposal must be the root or something the root depends
    /// on, directly or through other items (`after` and `work.<key>` reads). Reported for
    /// each item outside the root's closure.
    ///
    /// ## Why it matters
    /// Work outside the generation's closure would run for nothing and spend the goal's
    /// attempt budget; it is the shape of a plan that hides work from review.
    ///
    /// ## Example
    /// Bad: items `notes` (the root) and `cleanup`, where nothing depends on `cleanup`.
    ///
    /// Good: `"after": ["cleanup"]` on `notes`, or no `cleanup`.
    ///
    /// ## Fix safety
    /// No automatic fix.
    UnreachableWork = "LW1006", "unreachable-work", Goal, Error, Stable;

    /// A proposal exceeds a bound of the goal.
    ///
    /// ## What it does
    /// Checks a replan proposal against the goal's frozen bounds: items per plan
    /// (`max_items_per_plan`), items planned over all replans (`max_planned_items`), replans
    /// (`max_replans`), the template's attempt ceiling, the goal-wide attempt budget
    /// (`max_total_attempts`) and the wall time (`max_wall_time_s`). The message names the
    /// bound and the numbers.
    ///
    /// ## Why it matters
    /// Bounds are what keep a goal from becoming an open-ended task generator; they count
    /// every generation, so a new plan never resets them.
    ///
    /// ## Example
    /// Bad: a proposal of 6 items where `max_items_per_plan` is 4.
    ///
    /// Good: 4 items or fewer.
    ///
    /// ## Fix safety
    /// No automatic fix.
    PlanOverBounds = "LW1007", "plan-over-bounds", Goal, Error, Stable;

    /// A template's registered version no longer matches its pinned digest.
    ///
    /// ## What it does
    /// When a goal is created and whenever a plan is materialized, every template it uses is
    /// read from the registry and re-hashed (RFC 8785, SHA-256). Reported when the stored
    /// bytes do not hash to the version the catalog pins, or the registry cannot show it
    /// intact.
    ///
    /// ## Why it matters
    /// The digest is the template's identity: code that does not hash to it is not the code
    /// that was reviewed, and nothing is run or materialized from it.
    ///
    /// ## Example
    /// Bad: an object in the registry edited after it was registered.
    ///
    /// Good: `lwirc registry verify` reports nothing; register the version again from its
    /// draft if it does.
    ///
    /// ## Fix safety
    /// No automatic fix.
    TemplateDigestMismatch = "LW1008", "template-digest-mismatch", Goal, Error, Stable;

    /// A template's version is not registered.
    ///
    /// ## What it does
    /// Every catalog entry pins a WorkflowVersion that must be registered in the registry the
    /// goal is created against (`--registry`, `LWIR_REGISTRY`, `.lwir/registry`).
    ///
    /// ## Why it matters
    /// Only registered versions were validated against their definition and pinned with
    /// their capability snapshot; a goal may run nothing else.
    ///
    /// ## Example
    /// Bad: `"version": "sha256:5c28…"` copied from another machine's registry.
    ///
    /// Good: `lwirc register draft.json -d workflow.json`, then the version it prints.
    ///
    /// ## Fix safety
    /// No automatic fix.
    TemplateNotRegistered = "LW1009", "template-not-registered", Goal, Error, Stable;

    /// A template's registration does not record its interface.
    ///
    /// ## What it does
    /// Work inputs are type-checked against the template's input schema and `work.<key>.output`
    /// reads against its output schema, both kept in the registration record. Reported for a
    /// version registered before lwirc kept them.
    ///
    /// ## Why it matters
    /// Without the interface, the goal's work could not be checked before it runs.
    ///
    /// ## Example
    /// Bad: a version registered by an older lwirc.
    ///
    /// Good: `lwirc register --rebase draft.json -d workflow.json` records it again, with its
    /// interface.
    ///
    /// ## Fix safety
    /// No automatic fix.
    TemplateWithoutInterface = "LW1010", "template-without-interface", Goal, Error, Stable;

    /// A replan's answer is not an `apply` proposal lwirc can read.
    ///
    /// ## What it does
    /// A replanning planner answers `{"kind": "apply", "items": [...], "root": "KEY"}` or
    /// `{"kind": "attention", "rationale": "…"}`. Reported for any other `kind`, with the shape
    /// findings of the proposal beside it.
    ///
    /// ## Why it matters
    /// A proposal that cannot be read is refused whole; nothing of it is materialized, and
    /// the replan counts as ending without a proposal.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "kind": "draft", "lwir": {} }
    /// ```
    /// Good:
    /// ```json
    /// { "kind": "apply", "items": [ … ], "root": "notes_cached" }
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix.
    InvalidProposal = "LW1011", "invalid-proposal", Goal, Error, Stable;

    /// A work output does not satisfy its template's output schema.
    ///
    /// ## What it does
    /// `lwirc goal report … succeeded --output FILE` checks the output against the output
    /// schema recorded for the item's template and refuses it, naming each violation, when it
    /// does not fit.
    ///
    /// ## Why it matters
    /// Later work reads `work.<key>.output` typed by that schema; an output that breaks it
    /// would make their inputs wrong after they were checked.
    ///
    /// ## Example
    /// Bad: `{"notes": 3}` where the schema wants `notes` to be a string.
    ///
    /// Good: `{"notes": "…"}`.
    ///
    /// ## Fix safety
    /// No automatic fix.
    WorkOutputMismatch = "LW1012", "work-output-mismatch", Goal, Error, Stable;

    /// A runner could not be started.
    ///
    /// ## What it does
    /// `lwirc goal run` starts the `--runner` command once per attempt, without a shell (the
    /// planner's rules: `crates/lwir-spec/README.md` §8.1). Reported, and recorded as the attempt's
    /// failure, when the program does not exist or is not executable.
    ///
    /// ## Why it matters
    /// The attempt counts against the template's ceiling and the goal's budget like any
    /// failed attempt: lwirc never pretends a step ran.
    ///
    /// ## Example
    /// Bad: `--runner 'runners/run.sh'` where the script is not executable.
    ///
    /// Good: `chmod +x runners/run.sh`.
    ///
    /// ## Fix safety
    /// Nothing to fix in the goal; fix the command.
    RunnerNotStarted = "LW1013", "runner-not-started", Runner, Error, Stable;

    /// A runner exited with a non-zero status or was killed by a signal.
    ///
    /// ## What it does
    /// An attempt's answer is read only from a runner that exits with status 0. Any other
    /// exit is this finding, with the end of what the runner wrote on standard error, recorded
    /// as the attempt's failure.
    ///
    /// ## Why it matters
    /// A runner that crashed said nothing reliable about the work; the attempt failed.
    ///
    /// ## Example
    /// Bad: the runner raises an exception (exit 1).
    ///
    /// Good: it catches the workflow's failure and answers `{"kind": "failed", "error": "…"}`.
    ///
    /// ## Fix safety
    /// Nothing to fix in the goal.
    RunnerFailed = "LW1014", "runner-failed", Runner, Error, Stable;

    /// A runner did not answer within the timeout.
    ///
    /// ## What it does
    /// Every attempt has a deadline (`--runner-timeout`, an hour by default). When it passes,
    /// the runner and every process it started are killed and the attempt fails.
    ///
    /// ## Why it matters
    /// A hung runner would hold a `max_parallel` slot for ever.
    ///
    /// ## Example
    /// Bad: a runner waiting on a queue that never answers.
    ///
    /// Good: a runner with its own shorter timeout that answers `failed` when it passes.
    ///
    /// ## Fix safety
    /// Nothing to fix in the goal.
    RunnerTimedOut = "LW1015", "runner-timed-out", Runner, Error, Stable;

    /// A runner wrote more than the limit to standard output.
    ///
    /// ## What it does
    /// At most `--runner-max-output` bytes (16 MiB by default) are read; a runner that writes
    /// more is killed and the attempt fails.
    ///
    /// ## Why it matters
    /// An unbounded answer would exhaust memory; outputs are stored in the goal's log.
    ///
    /// ## Example
    /// Bad: a runner that prints its whole log on standard output.
    ///
    /// Good: logs on standard error, only the answer on standard output.
    ///
    /// ## Fix safety
    /// Nothing to fix in the goal.
    RunnerAnswerTooLarge = "LW1016", "runner-answer-too-large", Runner, Error, Stable;

    /// A runner's standard output is not JSON.
    ///
    /// ## What it does
    /// The answer must be exactly one strict I-JSON value. Anything else — a log line, nothing
    /// at all, a duplicate key — is this finding, recorded as the attempt's failure.
    ///
    /// ## Why it matters
    /// An output that cannot be read exactly cannot be handed to the work that reads it.
    ///
    /// ## Example
    /// Bad: `Done! {"kind": "succeeded", …}`
    ///
    /// Good: `{"kind": "succeeded", "output": {…}}`
    ///
    /// ## Fix safety
    /// Nothing to fix in the goal.
    RunnerAnswerNotJson = "LW1017", "runner-answer-not-json", Runner, Error, Stable;

    /// A runner's answer is JSON but not an answer.
    ///
    /// ## What it does
    /// A runner answers `{"kind": "succeeded", "output": …}` or `{"kind": "failed", "error":
    /// "…"}`. Any other `kind`, a missing `output`, or an `error` that is not a string is this
    /// finding, recorded as the attempt's failure.
    ///
    /// ## Why it matters
    /// lwirc records only what it can read without guessing.
    ///
    /// ## Example
    /// Bad:
    /// ```json
    /// { "status": "ok" }
    /// ```
    /// Good:
    /// ```json
    /// { "kind": "succeeded", "output": { "summary": "…" } }
    /// ```
    ///
    /// ## Fix safety
    /// Nothing to fix in the goal.
    RunnerAnswerInvalid = "LW1018", "runner-answer-invalid", Runner, Error, Stable;

    /// A revision of the plan changes work that has already run.
    ///
    /// ## What it does
    /// An adaptation (`replanning.adaptation`) lets the planner revise the *remaining* plan
    /// while a goal runs. Its `revise` answer may repeat an item of the active generation
    /// only unchanged. Reported for a repeated item whose template, input or dependencies
    /// differ from the item's, when that item has succeeded or is running (for a pending item
    /// the finding is LW1002: give the changed item a new key, and the pending one becomes
    /// obsolete).
    ///
    /// ## Why it matters
    /// Completed and running work is history: its outputs were read, its attempts counted.
    /// A revision only decides what happens next.
    ///
    /// ## Example
    /// Bad: `{"key": "fetch", "template": "fetch", "input": {"repo": "other/repo"}}` where
    /// `fetch` already succeeded with `acme/widgets`.
    ///
    /// Good: leave `fetch` out, or repeat it exactly; add new items after it.
    ///
    /// ## Fix safety
    /// No automatic fix.
    AltersFinishedWork = "LW1019", "alters-finished-work", Goal, Error, Stable;

    /// A work item's input, resolved, is larger than a work item's output may be.
    ///
    /// ## What it does
    /// Before an item is dispatched (`lwirc goal next`, `goal run`, `goal serve`), its input's
    /// expressions and templates are evaluated over the outputs it reads. The resolved input
    /// is at most 16 MiB as compact JSON — what a runner may answer — counted while it is
    /// built. An input that would pass the bound stops there, and the attempt fails with this
    /// finding; the runner is not started.
    ///
    /// ## Why it matters
    /// Outputs are bounded, but an input can read one many times: a template repeating
    /// `${ work.fetch.output.text }` two thousand times over an 8 MB text would be 16 GB,
    /// built in memory and handed to a runner.
    ///
    /// ## Example
    /// Bad: `"prompt": "${ work.fetch.output.text } ${ work.fetch.output.text } …"` (repeated
    /// until it passes 16 MiB).
    ///
    /// Good: `"text": "${ work.fetch.output.text }"` once, and the template that needs it
    /// several times reads it from its input.
    ///
    /// ## Fix safety
    /// No automatic fix.
    WorkInputTooLarge = "LW1020", "work-input-too-large", Goal, Error, Stable;

    /// The run input does not fit the workflow's input schema.
    ///
    /// ## What it does
    /// `lwirc run` checks `--input` against the definition's `input` schema, as the version's
    /// registration record keeps it (`interface.input`), before anything runs. Each value
    /// that does not fit is a finding at its pointer into the input file, with the schema
    /// keyword that rejects it.
    ///
    /// ## Why it matters
    /// Every expression of the version was type-checked against that schema; an input
    /// outside it would make those checks worthless, and a tool would be called with
    /// values nobody checked. Nothing is called.
    ///
    /// ## Example
    /// Bad: `{"repo": "widgets"}` where the schema says `"pattern": "^[^/]+/[^/]+$"`.
    ///
    /// Good: `{"repo": "acme/widgets"}`.
    ///
    /// ## Fix safety
    /// Nothing to fix in the version; fix the input.
    RunInputMismatch = "LW1101", "run-input-mismatch", Runtime, Error, Stable;

    /// A value at run time does not fit the schema it flows into.
    ///
    /// ## What it does
    /// Every value that flows into a schema is checked when it exists, those the checker
    /// could only type `dyn` included: a tool's arguments against its input schema, its
    /// result against its output schema, a model's answer or a code body's result against
    /// the step's `output`, the workflow's output against the definition's. The step fails
    /// with the pointer into the value and the keyword (and schema pointer) that rejects
    /// it, after its retries.
    ///
    /// ## Why it matters
    /// What a step hands on is what later expressions were typed against. A model that
    /// answers `{"label": "urgent"}` where the schema allows `bug`, `feature`, `question`
    /// must not reach a tool.
    ///
    /// ## Example
    /// Bad: a `model.call` with `"output": {"properties": {"label": {"enum": ["bug",
    /// "feature"]}}}` whose model answers `{"label": "urgent"}`.
    ///
    /// Good: an answer `{"label": "bug"}`; or `retry.max_attempts` to ask again.
    ///
    /// ## Fix safety
    /// Nothing to fix in the version; fix the tool, the model's prompt or the input.
    ValueSchemaMismatch = "LW1102", "value-schema-mismatch", Runtime, Error, Stable;

    /// An expression or template has no value at run time.
    ///
    /// ## What it does
    /// Expressions are evaluated by the evaluator `lwirc eval` uses, with its work budget.
    /// One that fails — a missing field read without `has(…)`, an index out of range,
    /// integer overflow, a template that interpolates a list, a value larger than the
    /// runtime's cap, the budget spent — fails its step with the expression's error.
    ///
    /// ## Why it matters
    /// A `when`, an argument or a prompt without a value cannot be guessed.
    ///
    /// ## Example
    /// Bad: `"${ steps.fetch.output.items[0].title }"` when `items` came back empty.
    ///
    /// Good: `"${ size(steps.fetch.output.items) > 0 ? steps.fetch.output.items[0].title : '' }"`.
    ///
    /// ## Fix safety
    /// No automatic fix.
    ExpressionFailed = "LW1103", "expression-failed", Runtime, Error, Stable;

    /// A tool call failed.
    ///
    /// ## What it does
    /// Reported when a tool gives no result: a command tool that cannot be started, exits
    /// with a non-zero status or is killed, answers after its timeout, writes more than its
    /// cap, or prints something that is not one JSON value; a server that fails the call;
    /// or a result the tool itself marks as an error (`isError`). The step fails, after
    /// its retries, with the tool's message cleaned of terminal escapes.
    ///
    /// ## Why it matters
    /// lwirc never pretends a step ran: the run stops there, and `lwirc runs retry` runs the
    /// failed step again once the tool is fixed, without calling what already succeeded.
    ///
    /// ## Example
    /// Bad: a command tool that prints `ok` (not JSON) where its output schema wants an
    /// object.
    ///
    /// Good: it prints `{"ok": true}`.
    ///
    /// ## Fix safety
    /// Nothing to fix in the version; fix the tool or its binding.
    ToolCallFailed = "LW1104", "tool-call-failed", Runtime, Error, Stable;

    /// A model call failed, or its tool loop did not end.
    ///
    /// ## What it does
    /// Reported when a `model.call` gets no usable answer: the model server or command
    /// fails, times out, answers too much or something unreadable, or — for a step with
    /// `tools` — keeps asking for tool calls past the bound of rounds.
    ///
    /// ## Why it matters
    /// A model that never stops calling tools would spend without end; the bound makes the
    /// step fail instead.
    ///
    /// ## Example
    /// Bad: a model that answers every round with another tool call.
    ///
    /// Good: a prompt that says when to stop and answer in the output schema.
    ///
    /// ## Fix safety
    /// Nothing to fix in the version.
    ModelCallFailed = "LW1105", "model-call-failed", Runtime, Error, Stable;

    /// A code body failed.
    ///
    /// ## What it does
    /// Reported when a `code.run` body exits with a non-zero status, is stopped at a limit
    /// of the sandbox, or prints something that is not one JSON value on standard output.
    ///
    /// ## Why it matters
    /// Its output is what later steps read; without one the step has none.
    ///
    /// ## Example
    /// Bad: `print("done")` as the last line of a body whose output schema is an object.
    ///
    /// Good: `print(json.dumps({"done": True}))`.
    ///
    /// ## Fix safety
    /// No automatic fix.
    CodeRunFailed = "LW1106", "code-run-failed", Runtime, Error, Stable;

    /// A loop ran `max_iterations` times without its `until` holding.
    ///
    /// ## What it does
    /// A `loop` runs its steps, then evaluates `until`; when it is still false after
    /// `max_iterations` iterations the loop step fails.
    ///
    /// ## Why it matters
    /// A bound that is reached silently would hand on a result the workflow never
    /// reached.
    ///
    /// ## Example
    /// Bad: polling a job with `"max_iterations": 3` when it takes ten polls.
    ///
    /// Good: a larger bound, or a wait in the polled tool.
    ///
    /// ## Fix safety
    /// No automatic fix.
    LoopExhausted = "LW1107", "loop-exhausted", Runtime, Error, Stable;

    /// A step needs what this lwirc cannot do, or what the bindings do not bind.
    ///
    /// ## What it does
    /// Reported before anything runs when a tool or model slot the version references has
    /// no binding, or an MCP server a tool is bound to cannot be started, reached or
    /// listed (its tools' drift could not be checked); and at the step when its binding
    /// needs something this build does not have (a sandbox that cannot run here:
    /// `code.run` fails closed, nothing runs unconfined).
    ///
    /// ## Why it matters
    /// A step that cannot be done must say why, naming the missing piece, instead of
    /// failing later with a confusing error.
    ///
    /// ## Example
    /// Bad: bindings without an entry for `github.add_label`, which the version calls.
    ///
    /// Good: `"tools": {"github.add_label": {"command": ["./tools/add-label"]}}`.
    ///
    /// ## Fix safety
    /// Nothing to fix in the version; fix the bindings or the machine.
    CapabilityUnavailable = "LW1108", "capability-unavailable", Runtime, Error, Stable;

    /// Replaying a run gave a different decision than the run recorded.
    ///
    /// ## What it does
    /// `lwirc runs replay` rebuilds a run from its log without calling a model, a tool or
    /// a code body: every expression is evaluated again from the recorded results, and
    /// each request (a tool's arguments, a prompt, a code body's input) and each decision
    /// (`when`, `over`, `until`, the branch case, a step's output, the workflow's output)
    /// must come out as recorded. The first that does not is this finding, naming the step
    /// path and both values. `lwirc runs resume` and `retry` check the same while they
    /// re-read the log, and refuse to go on.
    ///
    /// ## Why it matters
    /// A run is a pure function of its version, its input and its effects' results. A
    /// difference means the lwirc that replays evaluates differently from the one that ran
    /// (check before upgrading: `lwirc runs replay --all`), or the log was edited (a
    /// changed line is also found by its chain hash).
    ///
    /// ## Example
    /// Bad: a log whose recorded tool result was edited so that a later `when` flips.
    ///
    /// Good: an untouched log, replayed by an lwirc that evaluates the same way.
    ///
    /// ## Fix safety
    /// Nothing to fix: find out what changed.
    ReplayNondeterminism = "LW1109", "replay-nondeterminism", Runtime, Error, Stable;

    /// A run's log or the version it ran is damaged.
    ///
    /// ## What it does
    /// `lwirc runs verify` (and every command that reads a run) checks each line of the
    /// run's log against its chain hash, its seq and its shape, and the version the run
    /// recorded against the registry (the LWIR re-hashed to its digest). A mismatch is
    /// this finding, naming the run and the line.
    ///
    /// ## Why it matters
    /// A log is the only proof of what a run did; an edited line would make a replay or a
    /// retry build on something that never happened.
    ///
    /// ## Example
    /// Bad: a `tool.responded` line whose `result` was edited by hand.
    ///
    /// Good: logs written only by lwirc.
    ///
    /// ## Fix safety
    /// Nothing to fix: restore the log from a copy.
    RunLogDamaged = "LW1110", "run-log-damaged", Runtime, Error, Stable;
}

/// The reference of every code as one Markdown page (`docs/codes.md` is this text).
pub fn reference_markdown() -> String {
    let mut out = String::from(
        "# Finding codes\n\n\
         Generated from the code table in `crates/lwir-spec/src/codes.rs`; do not edit by hand \
         (`UPDATE_DOCS=1 cargo test -p lwir-spec --test it docs::` rewrites it). \
         `lwirc explain CODE` prints the same text.\n\n\
         | code | name | validator | severity | summary |\n|---|---|---|---|---|\n",
    );
    for &code in Code::ALL {
        out.push_str(&format!(
            "| [{code}](#{}) | `{}` | {} | {} | {} |\n",
            code.as_str().to_ascii_lowercase(),
            code.name(),
            code.stage().as_str(),
            code.severity().as_str(),
            code.summary()
        ));
    }
    for &code in Code::ALL {
        let docs = code.docs().replace("\n## ", "\n### ");
        out.push_str(&format!(
            "\n## {code}\n\n`{}` · {} · {}",
            code.name(),
            code.stage().as_str(),
            code.severity().as_str()
        ));
        if code.status() == Status::Removed {
            out.push_str(" · removed");
        }
        out.push_str("\n\n");
        out.push_str(&docs);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_and_names_are_unique_and_well_formed() {
        let mut codes = HashSet::new();
        let mut names = HashSet::new();
        for &c in Code::ALL {
            assert!(codes.insert(c.as_str()), "{c} twice");
            assert!(names.insert(c.name()), "{} twice", c.name());
            let s = c.as_str();
            assert!(
                (s.len() == 5
                    || s.len() == 6
                        && matches!(c.stage(), Stage::Goal | Stage::Runner | Stage::Runtime))
                    && s.starts_with("LW")
                    && s[2..].bytes().all(|b| b.is_ascii_digit())
            );
            assert!(
                c.name()
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            );
        }
    }

    #[test]
    fn every_code_is_documented_under_the_same_headings() {
        for &c in Code::ALL {
            let docs = c.docs();
            for heading in [
                "## What it does",
                "## Why it matters",
                "## Example",
                "## Fix safety",
            ] {
                assert!(docs.contains(heading), "{c} lacks `{heading}`");
            }
            assert!(
                docs.contains("Bad") && docs.contains("Good"),
                "{c} lacks a bad/good example"
            );
            assert!(!c.summary().is_empty());
        }
    }

    #[test]
    fn parses_codes_and_names() {
        assert_eq!(Code::parse("lw301"), Some(Code::UnknownTool));
        assert_eq!(Code::parse("unknown-tool"), Some(Code::UnknownTool));
        assert_eq!(Code::parse("LW999"), None);
    }
}
