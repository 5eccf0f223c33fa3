//! A server's tools as definition `tools` entries (`lwirc tools import`), in the normal
//! form drift compares.

use serde_json::{Map, Value, json};

use crate::normal::{self, Dropped, Reason, SchemaRole};
use crate::{Error, Server, Tool};

/// The server's tools as `{"tools": {ID: {description, input, output}}}`, ID being
/// `prefix` followed by the tool's name, and what the normal form dropped. See [`entries`].
pub fn tools_entries(
    server: &Server,
    prefix: Option<&str>,
) -> Result<(Value, Vec<Dropped>), Error> {
    let tools = server.list_tools()?;
    Ok(entries(&tools, prefix))
}

/// `tools` as definition entries: `description` (the tool's, else its title, else empty),
/// `input` (its `inputSchema` in the normal form) and `output` (its `outputSchema` in the
/// normal form, `{}` when it declares none). A tool whose ID would not be a tool id
/// (`[A-Za-z0-9_][A-Za-z0-9_.-]*`), or whose name was listed before, is left out and
/// reported.
pub fn entries(tools: &[Tool], prefix: Option<&str>) -> (Value, Vec<Dropped>) {
    let mut out = Map::new();
    let mut dropped = Vec::new();
    let mut sorted: Vec<&Tool> = tools.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    for tool in sorted {
        let id = format!("{}{}", prefix.unwrap_or(""), tool.name);
        let skip = if !is_tool_id(&id) {
            Some(format!(
                "`{}` cannot be a tool id (letters, digits, `_`, `.` and `-`, not starting with `.` or `-`)",
                crate::text::show_message(&id)
            ))
        } else if out.contains_key(&id) {
            Some("the server lists a tool of this name twice; the first is kept".to_owned())
        } else {
            None
        };
        if let Some(why) = skip {
            dropped.push(Dropped {
                tool: Some(tool.name.clone()),
                schema: None,
                pointer: String::new(),
                keyword: String::new(),
                reason: Reason::SkippedTool(why),
            });
            continue;
        }
        let (entry, mut tool_dropped) = entry(tool);
        dropped.append(&mut tool_dropped);
        out.insert(id, entry);
    }
    (json!({ "tools": Value::Object(out) }), dropped)
}

/// One tool as a definition entry (see [`entries`]), and what its normal form dropped.
pub fn entry(tool: &Tool) -> (Value, Vec<Dropped>) {
    let description = tool
        .description
        .clone()
        .or_else(|| tool.title.clone())
        .unwrap_or_default();
    let mut dropped = Vec::new();
    let mut normal = |schema: &Value, role: SchemaRole| {
        let (out, found) = normal::normalize(schema);
        dropped.extend(found.into_iter().map(|d| Dropped {
            tool: Some(tool.name.clone()),
            schema: Some(role),
            ..d
        }));
        out
    };
    let input = normal(&tool.input_schema, SchemaRole::Input);
    let output = match &tool.output_schema {
        Some(schema) => normal(schema, SchemaRole::Output),
        None => json!({}),
    };
    (
        json!({ "description": description, "input": input, "output": output }),
        dropped,
    )
}

fn is_tool_id(id: &str) -> bool {
    let mut bytes = id.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}
