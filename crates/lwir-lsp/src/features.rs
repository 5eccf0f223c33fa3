//! Hover, go-to-definition, completion and document symbols: each reads the spanned tree
//! of the document (and of the draft's definition) at a byte offset.

use lwir_spec::document::{Node, Value};
use lwir_spec::ir::{self, COMMON_STEP_FIELDS, StepKind};
use lwir_spec::{Finding, Span, pointer};

use super::analysis::{Analysis, Kind};

/// The innermost value at a byte offset, and its pointer.
#[derive(Debug)]
pub struct At<'d> {
    /// Its JSON Pointer.
    pub pointer: String,
    /// The value.
    pub node: &'d Node,
    /// Whether the offset is in the member's key rather than its value.
    pub in_key: bool,
    /// The key's span, when the offset is in a key.
    pub key_span: Option<Span>,
}

/// The innermost value (or member key) whose span holds `offset` (ends included, so that a
/// cursor just after a token is on it). Depth is bounded by the reader's.
pub fn at(root: &Node, offset: usize) -> At<'_> {
    let holds = |s: Span| s.start() <= offset && offset <= s.end();
    let mut node = root;
    let mut at = String::new();
    loop {
        let next = match &node.value {
            Value::Object(members) => members.iter().find_map(|m| {
                if holds(m.key_span) {
                    return Some(Err(m));
                }
                holds(m.value.span).then_some(Ok((pointer::join(&at, &m.key), &m.value)))
            }),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .find(|(_, n)| holds(n.span))
                .map(|(i, n)| Ok((pointer::join_index(&at, i), n))),
            _ => None,
        };
        match next {
            Some(Ok((p, n))) => {
                at = p;
                node = n;
            }
            Some(Err(member)) => {
                return At {
                    pointer: pointer::join(&at, &member.key),
                    node: &member.value,
                    in_key: true,
                    key_span: Some(member.key_span),
                };
            }
            None => {
                return At {
                    pointer: at,
                    node,
                    in_key: false,
                    key_span: None,
                };
            }
        }
    }
}

/// The field a pointer names in its step: `("/steps/2", "tool")` for `/steps/2/tool`, and
/// for a deeper pointer the step's field it is inside (`("/steps/2", "after")` for
/// `/steps/2/after/0`), when the pointer is in a step.
pub fn step_field(draft: &ir::Draft<'_>, at: &str) -> Option<(String, String)> {
    let mut best: Option<(String, String)> = None;
    draft.walk(&mut |step| {
        if let Some(rest) = at.strip_prefix(step.pointer.as_str())
            && let Some(rest) = rest.strip_prefix('/')
            && best
                .as_ref()
                .is_none_or(|(p, _)| p.len() < step.pointer.len())
        {
            let field = rest.split('/').next().unwrap_or_default();
            best = Some((step.pointer.clone(), unescape(field)));
        }
    });
    best
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// The step with id `id` (its pointer and node).
pub fn step_by_id<'d>(draft: &ir::Draft<'d>, id: &str) -> Option<(String, &'d Node)> {
    let mut found = None;
    draft.walk(&mut |step| {
        if found.is_none() && step.id() == Some(id) {
            found = Some((step.pointer.clone(), step.node));
        }
    });
    found
}

/// The `steps.<id>` reference under `offset` in the bytes of a string, when there is one:
/// the id and its byte span. Ids are ASCII, so the source bytes are read as they are.
pub fn step_reference(source: &[u8], string: Span, offset: usize) -> Option<(String, Span)> {
    reference(source, string, offset, "steps")
}

/// The `<root>.<name>` reference under `offset` in the bytes of a string (`steps.<id>`,
/// `work.<key>`): the name and its byte span.
pub fn reference(source: &[u8], string: Span, offset: usize, root: &str) -> Option<(String, Span)> {
    let inside = string.start() + 1..string.end().saturating_sub(1);
    if !inside.contains(&offset) && offset != inside.end {
        return None;
    }
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.';
    let mut start = offset;
    while start > inside.start && word(source[start - 1]) {
        start -= 1;
    }
    let mut end = offset;
    while end < inside.end && word(source[end]) {
        end += 1;
    }
    let text = std::str::from_utf8(&source[start..end]).ok()?;
    let mut at = start;
    let mut parts = text.split('.');
    while let Some(part) = parts.next() {
        let next_at = at + part.len() + 1;
        if part == root
            && let Some(id) = parts.next()
            && !id.is_empty()
        {
            // The cursor is on `steps` or on the id.
            if offset <= next_at + id.len() {
                return Some((id.to_owned(), Span::new(next_at, next_at + id.len())));
            }
            at = next_at + id.len() + 1;
            continue;
        }
        at = next_at;
    }
    None
}

/// Markdown for a hover: what is at `offset`.
pub fn hover(analysis: &Analysis, text: &str, offset: usize) -> Option<(String, Span)> {
    let doc = analysis.document()?;
    let here = at(doc.root(), offset);
    let mut parts: Vec<String> = Vec::new();
    let mut span = here.key_span.unwrap_or(here.node.span);
    if analysis.kind == Kind::Draft && !here.in_key {
        let draft = ir::Draft::new(doc.root());
        let definition = analysis
            .definition_document()
            .map(|d| ir::Definition::new(d.root()));
        if let Value::String(_) = here.node.value {
            // An expression or template: its type and cost.
            let plan = analysis.plan(text);
            if let Some(entry) = plan.entries.iter().find(|e| e.pointer == here.pointer) {
                let ty = entry.root().and_then(|r| plan.type_of(r)).unwrap_or("?");
                parts.push(format!(
                    "{} of type `{ty}` · cost at most {}",
                    if entry.kind == "template" {
                        "Template"
                    } else {
                        "Expression"
                    },
                    entry.cost
                ));
            }
            if let Some((id, id_span)) = step_reference(doc.source(), here.node.span, offset) {
                span = id_span;
                parts.push(producer(&draft, definition.as_ref(), &id));
            }
            if let Some((_, field)) = step_field(&draft, &here.pointer) {
                let id = here.node.as_str().unwrap_or_default();
                let is_tool = field == "tool" && here.pointer.ends_with("/tool")
                    || field == "tools" && !here.pointer.ends_with("/tools");
                if is_tool && let Some(def) = &definition {
                    parts.push(tool_text(def, id));
                }
                if field == "model"
                    && let Some(def) = &definition
                {
                    parts.push(slot_text(def, id));
                }
                if field == "after" {
                    parts.push(producer(&draft, definition.as_ref(), id));
                }
            }
        }
    }
    for f in analysis
        .findings()
        .filter(|f| f.span.start() <= offset && offset <= f.span.end())
    {
        parts.push(explain(f));
    }
    if parts.is_empty() {
        return None;
    }
    Some((parts.join("\n\n---\n\n"), span))
}

/// Markdown for a hover in a goal file: on a `work.<key>` reference, the work item and the
/// output schema of its template; on a work item's `template`, the template.
pub fn goal_hover(
    analysis: &Analysis,
    offset: usize,
    templates: &dyn lwir_goals::catalog::Templates,
) -> Option<(String, Span)> {
    let doc = analysis.document()?;
    let root = doc.root();
    let here = at(root, offset);
    if here.in_key || here.node.as_str().is_none() {
        return None;
    }
    let template_of = |name: &str| -> String {
        let Some(version) = root
            .get("templates")
            .and_then(|t| t.get(name))
            .and_then(|t| t.get("version"))
            .and_then(Node::as_str)
        else {
            return format!("The goal has no template `{name}`.");
        };
        match templates.template(version) {
            Ok(t) => {
                let mut out = format!(
                    "Template `{name}`: workflow `{}`, {}",
                    super::plain(&t.workflow),
                    t.version
                );
                if let Some(d) = &t.description {
                    out.push_str(&format!("\n\n{}", super::plain(d)));
                }
                out.push_str(&format!("\n\noutput:\n\n{}", json_block(&t.output)));
                out
            }
            Err(e) => format!(
                "Template `{name}` ({version}): {}",
                super::plain(&e.to_string())
            ),
        }
    };
    if let Some((key, span)) = reference(doc.source(), here.node.span, offset, "work") {
        let item = root
            .get("work")
            .and_then(Node::as_array)
            .unwrap_or_default()
            .iter()
            .find(|i| i.get("key").and_then(Node::as_str) == Some(key.as_str()));
        let text = match item.and_then(|i| i.get("template")).and_then(Node::as_str) {
            Some(template) => format!("Work item `{key}`\n\n{}", template_of(template)),
            None => format!("No work item has the key `{key}`."),
        };
        return Some((text, span));
    }
    let is_template = here.pointer.starts_with("/work/") && here.pointer.ends_with("/template");
    is_template.then(|| {
        (
            template_of(here.node.as_str().unwrap_or_default()),
            here.node.span,
        )
    })
}

/// What `lwirc explain` says of a finding's code, under its message.
fn explain(f: &Finding) -> String {
    format!(
        "**{}** `{}` ({}): {}\n\n{}",
        f.code,
        f.code.name(),
        f.severity.as_str(),
        f.code.summary(),
        f.code.docs()
    )
}

/// The step `id`'s output: what its producer gives.
fn producer(draft: &ir::Draft<'_>, definition: Option<&ir::Definition<'_>>, id: &str) -> String {
    let Some((pointer, node)) = step_by_id(draft, id) else {
        return format!("No step has the id `{id}`.");
    };
    let kind = node.get("kind").and_then(Node::as_str).unwrap_or("?");
    let schema = match StepKind::parse(kind) {
        Some(StepKind::ToolCall) => node
            .get("tool")
            .and_then(Node::as_str)
            .and_then(|t| definition?.tool(t)?.output())
            .map(Node::to_json),
        Some(StepKind::ModelCall | StepKind::CodeRun) => node.get("output").map(Node::to_json),
        _ => None,
    };
    let mut out = format!("Step `{id}` (`{kind}`, at `{pointer}`)");
    match schema {
        Some(schema) => {
            out.push_str(": its output is\n\n");
            out.push_str(&json_block(&schema));
        }
        None => out.push('.'),
    }
    out
}

fn tool_text(def: &ir::Definition<'_>, id: &str) -> String {
    let Some(tool) = def.tool(id) else {
        return format!("The definition has no tool `{id}`.");
    };
    let mut out = format!("Tool `{id}`");
    if let Some(d) = tool.node.get("description").and_then(Node::as_str) {
        out.push_str(&format!(": {}", super::plain(d)));
    }
    for (name, schema) in [("input", tool.input()), ("output", tool.output())] {
        if let Some(schema) = schema {
            out.push_str(&format!("\n\n{name}:\n\n{}", json_block(&schema.to_json())));
        }
    }
    out
}

fn slot_text(def: &ir::Definition<'_>, id: &str) -> String {
    let Some(slot) = def.model(id) else {
        return format!("The definition has no model slot `{id}`.");
    };
    let mut out = format!("Model slot `{id}`");
    if let Some(d) = slot.node.get("description").and_then(Node::as_str) {
        out.push_str(&format!(": {}", super::plain(d)));
    }
    out.push_str(&format!("\n\n{}", json_block(&slot.node.to_json())));
    out
}

/// A JSON value as a fenced block, cut at 4 KiB.
fn json_block(value: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    if text.len() > 4096 {
        let mut cut = 4096;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n…");
    }
    format!(
        "```json\n{}\n```",
        super::plain(&text).replace("```", "`\u{200b}``")
    )
}

/// Where go-to-definition leads from `offset`: a span in the draft itself, or a pointer
/// (whose key) in the definition.
#[derive(Debug, PartialEq, Eq)]
pub enum Target {
    /// A place in this document.
    Here(Span),
    /// The member at this pointer in the definition (its key).
    InDefinition(String),
}

/// Go to definition from a tool id, a model slot id, a `steps.<id>` reference or an
/// `after` entry.
pub fn definition(analysis: &Analysis, offset: usize) -> Option<Target> {
    if analysis.kind != Kind::Draft {
        return None;
    }
    let doc = analysis.document()?;
    let here = at(doc.root(), offset);
    if here.in_key {
        return None;
    }
    let draft = ir::Draft::new(doc.root());
    let id = here.node.as_str()?;
    let to_step = |id: &str| {
        let (pointer, node) = step_by_id(&draft, id)?;
        let span = node.get("id").map_or(node.span, |n| n.span);
        let _ = pointer;
        Some(Target::Here(span))
    };
    if let Some((ref_id, _)) = step_reference(doc.source(), here.node.span, offset) {
        return to_step(&ref_id);
    }
    let (_, field) = step_field(&draft, &here.pointer)?;
    match field.as_str() {
        "tool" if here.pointer.ends_with("/tool") => {
            Some(Target::InDefinition(pointer::join("/tools", id)))
        }
        "tools" if !here.pointer.ends_with("/tools") => {
            Some(Target::InDefinition(pointer::join("/tools", id)))
        }
        "model" if here.pointer.ends_with("/model") => {
            Some(Target::InDefinition(pointer::join("/models", id)))
        }
        "after" => to_step(id),
        _ => None,
    }
}

/// One completion item: its label, a detail line, and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// What is inserted.
    pub label: String,
    /// A line on what it is.
    pub detail: String,
    /// What sort of thing it is.
    pub kind: lsp_types::CompletionItemKind,
}

/// Completions at `offset` of `text`: tool ids after `"tool": "`, model slot ids after
/// `"model": "`, step kinds after `"kind": "`, step ids in an `after` list and after
/// `steps.` in an expression, function names inside `${ … }`, and the fields a step of its
/// kind may still have where a key goes. Read from the text before the cursor on its line
/// (so a half-typed document gets them too) and, for step fields, from the tree.
pub fn complete(analysis: Option<&Analysis>, text: &str, offset: usize) -> Vec<Completion> {
    use lsp_types::CompletionItemKind as K;
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let before = &text[line_start..offset];
    let doc = analysis.and_then(Analysis::document);
    let definition = analysis
        .and_then(Analysis::definition_document)
        .map(|d| ir::Definition::new(d.root()));
    // The steps the cursor can name: for an expression, the steps before its own in its
    // list and before each enclosing step in theirs (as the validators' scopes have it);
    // for an `after` entry, the other steps of its list.
    let here_pointer = doc.map(|d| at(d.root(), offset).pointer);
    let step_ids = |siblings: bool| -> Vec<Completion> {
        let Some(doc) = doc else { return Vec::new() };
        let draft = ir::Draft::new(doc.root());
        let pointer = here_pointer.as_deref().unwrap_or_default();
        let (before, others) = visible_steps(&draft, pointer);
        (if siblings { others } else { before })
            .into_iter()
            .filter_map(|s| {
                let id = s.id()?;
                let kind = s.field("kind").and_then(Node::as_str).unwrap_or("step");
                Some(Completion {
                    label: id.to_owned(),
                    detail: format!("{kind} at {}", s.pointer),
                    kind: K::REFERENCE,
                })
            })
            .collect()
    };
    // Inside `${ … }`?
    if let Some(open) = before.rfind("${")
        && !before[open..].contains('}')
    {
        let expr = &before[open + 2..];
        let word_start = expr
            .char_indices()
            .rev()
            .find(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .map_or(0, |(i, c)| i + c.len_utf8());
        if expr[word_start..].starts_with("steps.") && !expr[word_start + 6..].contains('.') {
            return step_ids(false);
        }
        let mut out: Vec<Completion> = lwir_spec::expr::functions::FUNCTIONS
            .iter()
            .map(|f| Completion {
                label: f.name.to_owned(),
                detail: f.doc.to_owned(),
                kind: if f.is_macro { K::KEYWORD } else { K::FUNCTION },
            })
            .collect();
        out.extend(
            lwir_spec::expr::functions::ROOTS
                .iter()
                .map(|r| Completion {
                    label: (*r).to_owned(),
                    detail: "workflow variable".to_owned(),
                    kind: K::VARIABLE,
                }),
        );
        return out;
    }
    let text_of =
        |node: &'_ Node, name: &str| node.get(name).and_then(Node::as_str).map(str::to_owned);
    if after_key(before, "tool") {
        return definition.map_or_else(Vec::new, |d| {
            let tools = d
                .tools
                .iter()
                .map(|t| (t.id, text_of(t.node, "description")));
            id_items(tools, "tool", K::FUNCTION)
        });
    }
    if after_key(before, "model") {
        return definition.map_or_else(Vec::new, |d| {
            let slots = d.models.iter().map(|m| (m.id, text_of(m.node, "model")));
            id_items(slots, "model slot", K::CLASS)
        });
    }
    if after_key(before, "kind") {
        return StepKind::ALL
            .iter()
            .map(|k| Completion {
                label: k.as_str().to_owned(),
                detail: "step kind".to_owned(),
                kind: K::ENUM_MEMBER,
            })
            .collect();
    }
    if in_after_list(before) {
        return step_ids(true);
    }
    if let Some(doc) = doc {
        let here = at(doc.root(), offset);
        let draft = ir::Draft::new(doc.root());
        // A key of a step object: the cursor in one of its keys, or between its members.
        let step_pointer = if here.in_key {
            pointer_parent(&here.pointer)
        } else if matches!(here.node.value, Value::Object(_)) {
            Some(here.pointer.clone())
        } else {
            None
        };
        if let Some(p) = step_pointer {
            let mut fields = None;
            draft.walk(&mut |s| {
                if s.pointer == p {
                    let present: Vec<&str> = s
                        .node
                        .as_object()
                        .unwrap_or_default()
                        .iter()
                        .map(|m| m.key.as_str())
                        .collect();
                    let kind_fields = s.kind.map_or(&[][..], StepKind::fields);
                    fields = Some(
                        COMMON_STEP_FIELDS
                            .iter()
                            .chain(kind_fields)
                            .filter(|f| !present.contains(f))
                            .map(|f| Completion {
                                label: (*f).to_owned(),
                                detail: match s.kind {
                                    Some(k) => format!("field of a {} step", k.as_str()),
                                    None => "field of every step".to_owned(),
                                },
                                kind: K::FIELD,
                            })
                            .collect::<Vec<_>>(),
                    );
                }
            });
            if let Some(fields) = fields {
                return fields;
            }
        }
    }
    Vec::new()
}

/// Completions of the definition's ids (tools or slots), each with its detail, or
/// `fallback` when it has none.
fn id_items<'a>(
    items: impl Iterator<Item = (&'a str, Option<String>)>,
    fallback: &str,
    kind: lsp_types::CompletionItemKind,
) -> Vec<Completion> {
    items
        .map(|(id, detail)| Completion {
            label: id.to_owned(),
            detail: detail.map_or_else(|| fallback.to_owned(), |d| super::plain(&d)),
            kind,
        })
        .collect()
}

/// The steps visible from `pointer`: those before the step it is in (in its list, and
/// before each enclosing step in theirs), and the other steps of its innermost list.
fn visible_steps<'a, 'd>(
    draft: &'a ir::Draft<'d>,
    pointer: &str,
) -> (Vec<&'a ir::Step<'d>>, Vec<&'a ir::Step<'d>>) {
    let inside = |p: &str| {
        pointer == p || (pointer.starts_with(p) && pointer.as_bytes().get(p.len()) == Some(&b'/'))
    };
    let mut before = Vec::new();
    let mut list: &[ir::Step<'d>] = &draft.steps;
    let others = loop {
        let Some(i) = list.iter().position(|s| inside(&s.pointer)) else {
            // Not in a step of this list (the draft's `output`, say): all of it is before.
            before.extend(list.iter());
            break list.iter().collect();
        };
        before.extend(list[..i].iter());
        let others: Vec<&ir::Step<'d>> = list
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, s)| s)
            .collect();
        match list[i].nested().find(|l| inside(l.pointer)) {
            Some(nested) => list = nested.steps,
            None => break others,
        }
    };
    (before, others)
}

fn pointer_parent(p: &str) -> Option<String> {
    p.rfind('/').map(|i| p[..i].to_owned())
}

/// Whether `before` ends inside the string value of member `key` (`"key": "par`).
fn after_key(before: &str, key: &str) -> bool {
    let Some(quote) = before.rfind('"') else {
        return false;
    };
    let rest = before[..quote].trim_end();
    let Some(rest) = rest.strip_suffix(':') else {
        return false;
    };
    rest.trim_end().ends_with(&format!("\"{key}\""))
}

/// Whether `before` ends inside an `"after": [ … ` list on the same line.
fn in_after_list(before: &str) -> bool {
    let Some(at) = before.rfind("\"after\"") else {
        return false;
    };
    let rest = before[at + 7..].trim_start();
    rest.strip_prefix(':')
        .map(str::trim_start)
        .is_some_and(|r| r.starts_with('[') && !r.contains(']'))
}

/// One document symbol: a name, a detail, a kind, its span, the span to select, children.
#[derive(Debug)]
pub struct Symbol {
    /// The name shown.
    pub name: String,
    /// A detail line.
    pub detail: Option<String>,
    /// Its kind.
    pub kind: lsp_types::SymbolKind,
    /// The whole value.
    pub span: Span,
    /// What to select: its id, or key.
    pub selection: Span,
    /// Nested symbols.
    pub children: Vec<Symbol>,
}

/// The document's outline: a draft's step tree; a definition's tools and model slots; a
/// goal file's work items.
pub fn symbols(analysis: &Analysis) -> Vec<Symbol> {
    use lsp_types::SymbolKind as S;
    let Some(doc) = analysis.document() else {
        return Vec::new();
    };
    let root = doc.root();
    match analysis.kind {
        Kind::Draft => {
            fn steps(list: &[ir::Step<'_>]) -> Vec<Symbol> {
                list.iter()
                    .map(|s| {
                        let id_node = s.field("id");
                        Symbol {
                            name: s.id().map_or_else(|| s.pointer.clone(), str::to_owned),
                            detail: s.field("kind").and_then(Node::as_str).map(str::to_owned),
                            kind: S::FUNCTION,
                            span: s.node.span,
                            selection: id_node.map_or(s.node.span, |n| n.span),
                            children: s.nested().flat_map(|l| steps(l.steps)).collect(),
                        }
                    })
                    .collect()
            }
            steps(&ir::Draft::new(root).steps)
        }
        Kind::Definition => {
            let mut out = Vec::new();
            for (key, kind) in [("tools", S::FUNCTION), ("models", S::CLASS)] {
                let Some(member) = root.member(key) else {
                    continue;
                };
                let children = member
                    .value
                    .as_object()
                    .unwrap_or_default()
                    .iter()
                    .map(|m| Symbol {
                        name: m.key.to_string(),
                        detail: None,
                        kind,
                        span: Span::new(m.key_span.start(), m.value.span.end()),
                        selection: m.key_span,
                        children: Vec::new(),
                    })
                    .collect();
                out.push(Symbol {
                    name: key.to_owned(),
                    detail: None,
                    kind: S::NAMESPACE,
                    span: Span::new(member.key_span.start(), member.value.span.end()),
                    selection: member.key_span,
                    children,
                });
            }
            out
        }
        Kind::Goal => root
            .get("work")
            .and_then(Node::as_array)
            .unwrap_or_default()
            .iter()
            .filter_map(|item| {
                let key = item.get("key")?;
                Some(Symbol {
                    name: key.as_str()?.to_owned(),
                    detail: item
                        .get("template")
                        .and_then(Node::as_str)
                        .map(str::to_owned),
                    kind: S::EVENT,
                    span: item.span,
                    selection: key.span,
                    children: Vec::new(),
                })
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_completes_from_the_line() {
        assert!(after_key(r#"  "tool": "git"#, "tool"));
        assert!(after_key(r#"  "tool" : "git"#, "tool"));
        assert!(!after_key(r#"  "tools": "git"#, "tool"));
        assert!(!after_key(r#"  "tool": "a", "args": "#, "tool"));
        assert!(in_after_list(r#"  "after": ["a", "#));
        assert!(!in_after_list(r#"  "after": ["a"], "#));
    }

    #[test]
    fn step_references_under_the_cursor() {
        let src = br#""${ steps.fetch.output.items }""#;
        let span = Span::new(0, src.len());
        let on_id = 12;
        assert_eq!(
            step_reference(src, span, on_id).map(|(id, _)| id),
            Some("fetch".to_owned())
        );
        assert_eq!(step_reference(src, span, 1), None);
    }
}
